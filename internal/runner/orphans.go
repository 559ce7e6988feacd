package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/proc"
	"github.com/governor-dev/governor/governor/statedir"
	"github.com/governor-dev/governor/internal/connect"
	"github.com/governor-dev/governor/internal/supervise"
)

// A runEntry is what a run leaves on this machine, in its user's runs
// directory (runsDir), while its command runs: enough for the next holder
// of one of its slots to end the tree if governor and its watchdog both
// died (or are stopped) and the lease expired while the tree works on.
// Nobody else stops such a tree: the lease's TTL frees the slot beside it.
type runEntry struct {
	RunID    string           `json:"run"`
	Host     string           `json:"host"`  // proc.HostID
	Store    string           `json:"store"` // storeID
	Keys     []governor.Key   `json:"keys"`
	Leases   []string         `json:"leases"`
	Leader   supervise.Member `json:"leader"`
	Governor supervise.Member `json:"governor"`
	Watchdog supervise.Member `json:"watchdog"`
}

// runsDir is the directory of this user's run entries: the runs
// directory beside the file backend's default state dir ("" if there is
// no home: then no entry is left, and none is ended).
func runsDir(env []string) string {
	base := getenv(env, "XDG_STATE_HOME")
	if !filepath.IsAbs(base) {
		home := getenv(env, "HOME")
		if home == "" {
			return ""
		}
		base = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(statedir.Under(base), "runs")
}

// storeID names the run's store (backend, Redis URL or state dir) without
// showing it: a digest.
func (r *run) storeID() string {
	b, _ := json.Marshal(connect.StoreOf(&r.o.Config.Config))
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}

// keys lists the keys of the run's leases.
func (r *run) keys() ([]governor.Key, []string) {
	var keys []governor.Key
	var ids []string
	for _, l := range r.leases {
		keys, ids = append(keys, l.Key()), append(ids, l.ID())
	}
	return keys, ids
}

// leaveEntry writes the run's entry once its command started; the
// returned func removes it. Best effort: an entry that cannot be written
// is said on stderr, and the run goes on as before entries existed.
func (r *run) leaveEntry(tree *supervise.Tree) func() {
	dir := runsDir(r.env)
	ms := tree.Members()
	if dir == "" || r.wd == nil || len(r.leases) == 0 || len(ms) == 0 {
		return func() {}
	}
	self, err := proc.Stat(os.Getpid())
	wd, werr := proc.Stat(r.wd.pid())
	if err != nil || werr != nil {
		return func() {}
	}
	e := runEntry{RunID: r.id, Host: proc.HostID(), Store: r.storeID(), Leader: ms[0],
		Governor: supervise.Member{PID: self.PID, Start: self.Start}, Watchdog: supervise.Member{PID: wd.PID, Start: wd.Start}}
	e.Keys, e.Leases = r.keys()
	b, _ := json.Marshal(e)
	path := filepath.Join(dir, r.id+".json")
	err = os.MkdirAll(dir, 0o700)
	if err == nil {
		err = statedir.WriteFile(path, b) // whole or not at all: a stop between two writes
	}
	if err != nil {
		fmt.Fprintf(r.stderr, "governor: cannot leave the run's entry (for the next holder to end its command if governor and its watchdog die): %v\n", err)
		return func() {}
	}
	return func() { removeEntry(r.env, r.id) }
}

// removeEntry removes run id's entry: its tree is gone. The watchdog
// does so after it killed the tree of a governor that died, or the
// entry would be left for good (a next run removes only the entries of
// its own store and resources).
func removeEntry(env []string, id string) {
	if dir := runsDir(env); dir != "" && isRunID(id) {
		_ = os.Remove(filepath.Join(dir, id+".json"))
	}
}

// endOrphans ends, before the command starts, the trees of earlier runs
// on this machine of one of the run's resources, in the same store, that
// nobody guards any more: governor and its watchdog both dead or stopped,
// and the lease gone (expired, or reclaimed). Such a tree would work on
// beside this run. Each is killed as the watchdog would have (its cgroup,
// its members, its process group while a member is in it, the processes
// marked with its run id, their descendants); an entry whose tree is gone
// is removed. It fails if a tree could not be ended: the command must not
// start beside it.
func (r *run) endOrphans(ctx context.Context) error {
	dir := runsDir(r.env)
	if dir == "" {
		return nil
	}
	paths, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	keys, _ := r.keys()
	host, store := proc.HostID(), r.storeID()
	for _, path := range paths {
		var e runEntry
		b, err := os.ReadFile(path)
		if err != nil || json.Unmarshal(b, &e) != nil || e.Host != host {
			if err == nil && e.Host != host && e.Host != "" {
				_ = os.Remove(path) // of an earlier boot
			}
			continue
		}
		if !isRunID(e.RunID) || e.RunID == r.id || e.Store != store || !slices.ContainsFunc(e.Keys, func(k governor.Key) bool { return slices.Contains(keys, k) }) {
			continue
		}
		if guarding(e.Governor) || guarding(e.Watchdog) || r.stillHeld(ctx, e) {
			continue
		}
		g := &guard{id: e.RunID, stderr: r.stderr}
		g.tree.members = map[int]uint64{e.Leader.PID: e.Leader.Start}
		g.tree.leader = e.Leader
		killed, err := g.killTree()
		if err != nil {
			return fmt.Errorf("the command of run %s, whose governor and watchdog are gone and whose lease expired, works on: %w", e.RunID, err)
		}
		if killed > 0 {
			fmt.Fprintf(r.stderr, "governor: run %s: its governor and watchdog are gone or stopped and its lease expired, while its command worked on: killed %d processes of it before starting\n", e.RunID, killed)
		}
		_ = os.Remove(path)
	}
	return nil
}

// isRunID reports whether id reads as newID makes them: 24 hex digits
// (an entry's id names the cgroup the tree is killed in).
func isRunID(id string) bool {
	b, err := hex.DecodeString(id)
	return err == nil && len(b) == 12
}

// guarding reports whether m is alive and not stopped: a governor or a
// watchdog that can still stop its tree.
func guarding(m supervise.Member) bool {
	s, err := proc.Stat(m.PID)
	return err == nil && s.Start == m.Start && !s.Stopped()
}

// stillHeld reports whether a lease of e is still held in the store (or
// that cannot be told): its tree is then not an orphan yet.
func (r *run) stillHeld(ctx context.Context, e runEntry) bool {
	for _, k := range e.Keys {
		st, err := r.g.Status(ctx, k.Resource)
		if err != nil {
			return true
		}
		for _, h := range st.Holders {
			if slices.Contains(e.Leases, h.LeaseID) {
				return true
			}
		}
	}
	return false
}
