// Package governor at the module's root carries only the release version:
// the VERSION file beside go.mod, embedded, so that every build of the
// module (go build, go install …@vX, a build with -buildvcs=false, the
// release script) knows it without a flag. The library is the package
// github.com/governor-dev/governor/governor; the program is cmd/governor.
//
// VERSION is the one source of the version: the release script stamps it
// into the Python wheels and the npm packages and tags the commit
// v<VERSION>; internal/buildinfo's test fails when any of them disagree.
package governor

import (
	_ "embed"
	"strings"
)

//go:embed VERSION
var versionFile string

// Version is the release version, "0.1.0" (no leading v; the tag is
// "v" + Version).
var Version = strings.TrimSpace(versionFile)

// License is the SPDX id of the licence (LICENSE) of the module, the
// wheels and the npm packages alike.
const License = "Apache-2.0"
