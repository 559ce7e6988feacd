package config

import (
	"fmt"
)

// HeavyResource is the name by which the with-heavy-lock wrapper's users
// know its slot (README's first example: governor run --resource heavy).
// With $HEAVY_LOCK_DIR set and no resource bound to a mkdir slot in any
// layer, it is bound to that directory: a user who exports the wrapper's
// variable and types the example must not run beside the wrapper's jobs.
// A configured limit other than 1 for it means it is something else: then
// it is not bound.
const HeavyResource = "heavy"

// implicitHeavyOrigin is the origin of HeavyResource's binding when it
// came from $HEAVY_LOCK_DIR alone.
const implicitHeavyOrigin = "env " + EnvHeavyLockDir + " (no mkdir_lock configured: " + HeavyResource + " is the wrapper's slot)"

// implicitHeavyLock returns resources.heavy.mkdir_lock = dir (and limit 1
// when no layer gives one) when no layer binds any resource to a mkdir
// slot and none gives heavy a limit other than 1; else nothing.
func implicitHeavyLock(dir string, layers ...[]*setting) []*setting {
	limited := false
	for _, layer := range layers {
		for _, s := range layer {
			if isMkdirLock(s.path) {
				return nil
			}
			if dotted(s.path) == "resources."+HeavyResource+".limit" {
				if fmt.Sprint(s.value) != "1" {
					return nil
				}
				limited = true
			}
		}
	}
	out := []*setting{{path: []string{"resources", HeavyResource, "mkdir_lock"}, value: dir, raw: dir, source: SourceEnv, origin: implicitHeavyOrigin}}
	if !limited { // the slot is one slot
		out = append(out, &setting{path: []string{"resources", HeavyResource, "limit"}, value: 1, raw: "1", source: SourceEnv, origin: implicitHeavyOrigin})
	}
	return out
}

// MkdirLockNotes returns, by resource, what a run says once on stderr
// before taking the resource's mkdir slot: only for a binding that came
// from $HEAVY_LOCK_DIR alone (HeavyResource), which nothing in the
// configuration shows.
func (c Config) MkdirLockNotes() map[string]string {
	out := map[string]string{}
	if c.origin == nil {
		return out
	}
	for name, r := range c.Resources {
		if s := c.origin.settings["resources."+name+".mkdir_lock"]; s == nil || s.origin != implicitHeavyOrigin {
			continue
		}
		out[name] = fmt.Sprintf("%s: shares the with-heavy-lock slot in %s ($%s is set and no mkdir_lock is configured); "+
			"to make it explicit, or to bind another resource, set resources.<name>.mkdir_lock in exec-defaults.yaml",
			name, r.MkdirLock, EnvHeavyLockDir)
	}
	return out
}
