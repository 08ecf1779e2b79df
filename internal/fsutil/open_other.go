//go:build !unix

package fsutil

// openFlags is empty where the system has no O_NONBLOCK; the mode check
// before the open still refuses a FIFO named at the time of the check.
const openFlags = 0
