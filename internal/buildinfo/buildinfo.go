// Package buildinfo tells which governor this is, from the build
// information the Go toolchain embeds in every binary.
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// Info names a build.
type Info struct {
	// Version is the main module's version: v1.2.3 for `go install
	// …@v1.2.3`, "(devel)" for a build from a checkout.
	Version string
	// Revision is the VCS revision of a build from a checkout, with
	// "-dirty" when the tree had changes; "" when unknown.
	Revision string
	// GoVersion is the toolchain that built it.
	GoVersion string
}

// Read returns this binary's Info; fields the build did not record are
// "unknown" (Version) or "" (Revision).
func Read() Info {
	in := Info{Version: "unknown", GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return in
	}
	if bi.Main.Version != "" {
		in.Version = bi.Main.Version
	}
	if bi.GoVersion != "" {
		in.GoVersion = bi.GoVersion
	}
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Revision = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty && in.Revision != "" {
		in.Revision += "-dirty"
	}
	return in
}
