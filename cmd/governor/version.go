package main

import (
	"fmt"
	"runtime/debug"
)

// version describes the running binary from its build info: the module
// version (the tag for `go install …@vX.Y.Z`, "(devel)" for a build from
// a clone) and the VCS revision, commit time and modified flag that `go
// build` stamps in a clone.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown (no build information in the binary)"
	}
	return describeBuild(bi)
}

func describeBuild(bi *debug.BuildInfo) string {
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, at string
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev != "" {
		v += ", revision " + rev
		if at != "" {
			v += " of " + at
		}
		if modified {
			v += " with local changes"
		}
	}
	return fmt.Sprintf("%s, %s", v, bi.GoVersion)
}
