// Package build reports the version of the running binary.
package build

import "runtime/debug"

// Version is set at release time with
// -ldflags "-X github.com/gpumem/gpumem/internal/build.Version=v1.2.3".
var Version = ""

// String returns the release version, or the module version and VCS
// revision recorded by the Go toolchain, or "devel".
func String() string {
	if Version != "" {
		return Version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	v := info.Main.Version
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += " (" + s.Value[:12] + ")"
		}
	}
	return v
}
