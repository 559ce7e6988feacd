package proctest

import (
	"strconv"

	"github.com/governor-dev/governor/governor/proc"
)

// cmdline returns the command line of pid, NUL-separated; nil when it
// cannot be read.
func cmdline(pid int) []byte {
	b, _ := proc.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return b
}
