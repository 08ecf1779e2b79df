//go:build unix

package fsutil

import "syscall"

// openFlags makes opening a FIFO return at once instead of waiting for a
// writer (open(2), O_NONBLOCK); reads of a regular file ignore the flag.
const openFlags = syscall.O_NONBLOCK
