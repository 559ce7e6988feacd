package proc

import "os"

// Marked returns the live processes, other than the caller, whose initial
// environment has variable name listing word among its space-separated
// words (EnvListHas): the processes of a tree marked with its id. A
// process whose environment cannot be read (another user's, a
// non-dumpable one) is not found.
func Marked(name, word string) ([]Info, error) {
	all, err := List()
	if err != nil {
		return nil, err
	}
	return MarkedIn(all, name, word), nil
}

// MarkedIn is Marked among the processes of all (a List).
func MarkedIn(all []Info, name, word string) []Info {
	self := os.Getpid()
	var out []Info
	for _, p := range all {
		if p.PID <= 1 || p.PID == self || p.Zombie() || !EnvListHas(p.PID, name, word) {
			continue
		}
		out = append(out, p)
	}
	return out
}
