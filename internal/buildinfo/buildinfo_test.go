package buildinfo

import (
	"runtime"
	"runtime/debug"
	"testing"

	module "github.com/governor-dev/governor"
)

func TestRead(t *testing.T) {
	in := Read()
	if in.Version != module.Version || in.Version == "" || in.GoVersion != runtime.Version() {
		t.Fatalf("Read() = %+v; want version %q and the Go version %s", in, module.Version, runtime.Version())
	}
}

func TestString(t *testing.T) {
	v := module.Version
	vcs := []debug.BuildSetting{{Key: "vcs.revision", Value: "a497879abc"}, {Key: "vcs.time", Value: "2026-11-30T21:00:00Z"}, {Key: "vcs.modified", Value: "true"}}
	for _, tc := range []struct {
		name    string
		bi      *debug.BuildInfo
		stamped string
		want    string
	}{
		{"no build info", nil, "", v + ", commit unknown, " + runtime.Version()},
		{"-buildvcs=false, no stamp", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, "",
			v + ", commit unknown, go1.26.8"},
		{"-buildvcs=false, stamped", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, "ff00",
			v + ", commit ff00, go1.26.8"},
		{"checkout with changes", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs}, "",
			v + ", commit a497879abc-dirty of 2026-11-30T21:00:00Z, go1.26.8"},
		{"the stamp wins", &debug.BuildInfo{GoVersion: "go1.26.8", Settings: vcs}, "ff00", v + ", commit ff00, go1.26.8"},
		{"go install @tag", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v" + v}}, "",
			v + ", module v" + v + ", go1.26.8"},
		{"go install @commit", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v9.9.9-0.20261130210000-a497879abc00"}}, "",
			v + ", commit unknown, go1.26.8"},
		{"a tag that is not VERSION", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v9.9.9"}}, "",
			v + ", module v9.9.9 (module v9.9.9 does not match VERSION), go1.26.8"},
	} {
		if got := from(tc.bi, tc.stamped).String(); got != tc.want+", Apache-2.0" {
			t.Errorf("%s: String() = %q, want %q", tc.name, got, tc.want+", Apache-2.0")
		}
	}
}
