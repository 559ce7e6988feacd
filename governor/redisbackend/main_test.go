package redisbackend_test

import (
	"os"
	"testing"

	"github.com/governor-dev/governor/internal/proctest"
)

func TestMain(m *testing.M) {
	// The parallel tests mostly wait on servers and real time: the
	// real conformance runs' six lanes and the six others, all at once, on
	// any number of CPUs.
	proctest.DefaultParallel(14)
	os.Exit(m.Run())
}
