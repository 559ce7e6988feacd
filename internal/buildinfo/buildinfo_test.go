package buildinfo_test

import (
	"runtime"
	"testing"

	"github.com/governor-dev/governor/internal/buildinfo"
)

func TestRead(t *testing.T) {
	in := buildinfo.Read()
	if in.Version == "" || in.GoVersion != runtime.Version() {
		t.Fatalf("Read() = %+v; want a version and the Go version %s", in, runtime.Version())
	}
}
