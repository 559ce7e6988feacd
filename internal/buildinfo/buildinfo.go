// Package buildinfo tells which governor this is: the release version
// embedded from the VERSION file (the module root's package) and the
// commit, from the build information the Go toolchain embeds or, in a
// build without it (-buildvcs=false, the release script's), from the
// linker flag
//
//	-X github.com/governor-dev/governor/internal/buildinfo.commit=SHA
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	module "github.com/governor-dev/governor"
)

// commit is set by the linker (-X …/internal/buildinfo.commit=SHA); ""
// when the build did not set it.
var commit string

// Info names a build.
type Info struct {
	// Version is the release version from VERSION: "0.1.0".
	Version string
	// Module is the main module's version as Go recorded it: "v0.1.0"
	// for `go install …@v0.1.0`, "(devel)" for a build from a checkout,
	// "" when the binary has no build information.
	Module string
	// Revision is the commit it was built from, with "-dirty" when the
	// tree had changes; "" when unknown.
	Revision string
	// Time is the commit's time (RFC 3339) when the build recorded it.
	Time string
	// GoVersion is the toolchain that built it.
	GoVersion string
}

// Read returns this binary's Info.
func Read() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return from(bi, commit)
}

// from builds an Info from Go's build information (nil: none) and the
// linker-stamped commit ("" : none), which wins over the VCS stamp.
func from(bi *debug.BuildInfo, stamped string) Info {
	in := Info{Version: module.Version, GoVersion: runtime.Version()}
	if bi != nil {
		in.Module = bi.Main.Version
		if bi.GoVersion != "" {
			in.GoVersion = bi.GoVersion
		}
		dirty := false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				in.Revision = s.Value
			case "vcs.time":
				in.Time = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if dirty && in.Revision != "" {
			in.Revision += "-dirty"
		}
	}
	if stamped != "" {
		in.Revision, in.Time = stamped, ""
	}
	return in
}

// String is the --version line after "governor ": the version, the
// commit (or, for `go install …@vX`, the module version that names it),
// the Go release, the licence:
//
//	0.1.0, commit 02e5943… of 2026-12-04T18:00:00Z, go1.26.0, Apache-2.0
//	0.1.0, module v0.1.0, go1.26.0, Apache-2.0
//	0.1.0, commit unknown, go1.26.0, Apache-2.0
func (in Info) String() string {
	var b strings.Builder
	b.WriteString(in.Version)
	switch {
	case in.Revision != "":
		fmt.Fprintf(&b, ", commit %s", in.Revision)
		if in.Time != "" {
			fmt.Fprintf(&b, " of %s", in.Time)
		}
	case in.release():
		fmt.Fprintf(&b, ", module %s", in.Module)
	default:
		b.WriteString(", commit unknown")
	}
	if in.release() && in.Module != "v"+in.Version {
		// Built from a tag that is not v<VERSION>: say so rather than hide it.
		fmt.Fprintf(&b, " (module %s does not match VERSION)", in.Module)
	}
	fmt.Fprintf(&b, ", %s, %s", in.GoVersion, module.License)
	return b.String()
}

// release reports whether Module is a release tag (v1.2.3), not "(devel)",
// a pseudo-version (v1.2.4-0.2026…-abcdef) or a dirty build (…+dirty):
// `go install …@v1.2.3` records the tag, which names the commit.
func (in Info) release() bool {
	return strings.HasPrefix(in.Module, "v") && !strings.ContainsAny(in.Module, "-+")
}
