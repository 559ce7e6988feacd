package runner

import (
	"strings"

	"github.com/governor-dev/governor/internal/acquire"
)

// getenv returns the last value of key in env, "" if none: a later
// duplicate wins, as in os/exec.
func getenv(env []string, key string) string { return acquire.Getenv(env, key) }

// childEnv returns env without the variables Run sets, followed by them:
// held (acquire.Held.Env: GOVERNOR_HELD, GOVERNOR_TOKEN, HEAVY_LOCK_HELD
// when this run made the mkdir slot), the session and the run ids.
func childEnv(env, held []string, session string, runIDs string) []string {
	out := make([]string, 0, len(env)+len(held)+2)
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case EnvHeld, EnvToken, EnvSession, EnvRunIDs:
			continue
		}
		out = append(out, kv)
	}
	out = append(out, held...)
	return append(out, EnvSession+"="+session, EnvRunIDs+"="+runIDs)
}

// childHeld is what the command's environment says of what this run
// holds: acquire.Held.Env, and EnvSpend when the run reserved a cost
// (it wins over an outer run's: later duplicates win).
func (r *run) childHeld() []string {
	env := r.held.Env()
	if r.spent != nil {
		env = append(env, acquire.EnvSpend+"="+acquire.FormatSpend(r.spent, r.spend.Names()))
	}
	return env
}
