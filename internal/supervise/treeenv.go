//go:build linux || darwin

package supervise

import (
	"strings"

	"github.com/governor-dev/governor/governor/proc"
)

// treeIDOf reports whether the initial environment of process pid carries
// id in TreeEnv, and whether it could be read at all (proc.EnvListLookup).
func treeIDOf(pid int, id string) (has, read bool) { return proc.EnvListLookup(pid, TreeEnv, id) }

// withTreeID returns a copy of env in which TreeEnv lists id after any ids it
// already had.
func withTreeID(env []string, id string) []string {
	out := make([]string, 0, len(env)+1)
	prev := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, TreeEnv+"="); ok {
			prev = v // the last one wins, as in getenv
			continue
		}
		out = append(out, kv)
	}
	return append(out, TreeEnv+"="+strings.TrimSpace(prev+" "+id))
}
