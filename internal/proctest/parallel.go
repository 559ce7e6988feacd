package proctest

import (
	"flag"
	"strconv"
)

// DefaultParallel sets how many parallel tests run at once (`-parallel`,
// the number of CPUs by default) to n, unless the command line set it.
// For a package whose parallel tests mostly wait on processes, servers
// and real time: two at once on two cores leave the machine idle. Call it
// from TestMain, before m.Run.
func DefaultParallel(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", strconv.Itoa(n))
	}
}
