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
// allocate about 190 KB; the plotting library parses its fonts when the
// first chart is drawn (gonum/plot, used before, parsed them in its
// package initialiser: 250 KB more), and our own packages built their
// tables at start-up before and allocated 90 KB more.
const maxInitBytes = 240 << 10

// TestInitAllocations guards start-up: a package-level table or parse that
// moves work to initialisation shows up here as allocated bytes, which,
// unlike time, do not depend on the machine's load.
func TestInitAllocations(t *testing.T) {
	t.Logf("package initialisation allocated %d bytes (%d objects)", initStats.TotalAlloc, initStats.Mallocs)
	if got := initStats.TotalAlloc; got > maxInitBytes {
		t.Errorf("package initialisation allocated %d bytes (%d objects), want at most %d: "+
			"build large package-level values on first use (sync.OnceValue); "+
			"GODEBUG=inittrace=1 gpumem --version lists each package's share",
			got, initStats.Mallocs, maxInitBytes)
	}
}
