package main

import (
	"os"
	"runtime"
	"testing"
)

// initStats are the allocator's counts when TestMain starts: what the
// initialisers of every package in the program (and of testing) have
// allocated.
var initStats runtime.MemStats

func TestMain(m *testing.M) {
	runtime.ReadMemStats(&initStats)
	os.Exit(m.Run())
}

// maxInitBytes bounds what package initialisation may allocate. Every
// command pays for it before doing anything, so our tables, regexps and
// catalogs are built on first use instead. The program's initialisers
// allocate about 460 KB, of which about 250 KB is gonum/plot's (it parses
// its fonts in its package initialiser; the issue asks for a well-kept
// plotting library rather than hand-drawn charts, so that cost stays); our
// own packages built their tables at start-up before and allocated 90 KB
// more.
const maxInitBytes = 520 << 10

// TestInitAllocations guards start-up: a package-level table or parse that
// moves work to initialisation shows up here as allocated bytes, which,
// unlike time, do not depend on the machine's load.
func TestInitAllocations(t *testing.T) {
	if got := initStats.TotalAlloc; got > maxInitBytes {
		t.Errorf("package initialisation allocated %d bytes (%d objects), want at most %d: "+
			"build large package-level values on first use (sync.OnceValue); "+
			"GODEBUG=inittrace=1 gpumem --version lists each package's share",
			got, initStats.Mallocs, maxInitBytes)
	}
}
