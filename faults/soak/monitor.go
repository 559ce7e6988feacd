//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/proc"
	"github.com/governor-dev/governor/internal/connect"
)

// watch is the monitor's state between its rounds.
type watch struct {
	orphanSince map[int]time.Time // pid -> first seen with no parent in the soak's tree
	orphanBad   map[int]bool
	deadSince   map[string]time.Time // lease id -> first seen with its owner dead
	deadBad     map[string]bool
	rss         map[string]*rssSeries
	queues      map[string][]governor.Waiter // resource -> its queue at the last read
	sizes       []int64
	b           governor.Backend
	shareReads  int // reads of resProvider that saw a capacity share held
	mixedReads  int // those that saw a single grant held beside it
}

type rssSeries struct {
	kind    string
	pid     int
	first   time.Time
	samples []int64 // bytes
}

// monitor checks, every second until ctx ends: processes that outlive
// their parent beyond their bound, leases listed after their owner's
// death beyond their TTL; every 10 s the RSS of long-lived processes and
// the store's size; every 30 s the limit over the work spans so far.
func (s *soak) monitor(ctx context.Context) {
	w := &watch{orphanSince: map[int]time.Time{}, orphanBad: map[int]bool{}, deadSince: map[string]time.Time{},
		deadBad: map[string]bool{}, rss: map[string]*rssSeries{}, queues: map[string][]governor.Waiter{}}
	s.w = w
	defer func() {
		if w.b != nil {
			w.b.Close()
		}
	}()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		s.checkOrphans(w)
		s.checkDeadOwners(ctx, w)
		if n%10 == 0 {
			s.sampleRSS(w)
			_, size := s.st.size()
			if size >= 0 {
				w.sizes = append(w.sizes, size)
			}
		}
		if n%30 == 0 {
			for _, r := range []string{resHeavy, resShell, resShared, resProvider} {
				s.checkLimit(r)
			}
		}
	}
}

// checkOrphans finds the soak's processes whose parent chain no longer
// reaches the soak (their governor or client died): each must end
// within orphanBound.
func (s *soak) checkOrphans(w *watch) {
	all, _ := proc.List()
	mine := descendants(all, os.Getpid())
	now := time.Now()
	alive := map[int]bool{}
	for _, p := range s.scan() {
		alive[p.PID] = true
		if mine[p.PID] {
			delete(w.orphanSince, p.PID)
			continue
		}
		since, ok := w.orphanSince[p.PID]
		if !ok {
			w.orphanSince[p.PID] = now
			continue
		}
		s.worstAt("longest life of a process after its parent's death (s)", now.Sub(since).Seconds())
		if now.Sub(since) > orphanBound && !w.orphanBad[p.PID] {
			w.orphanBad[p.PID] = true
			s.violate("outlived", "%s pid %d (%s) lives %v after its parent's death (bound %v)", p.kind, p.PID, p.cmd, now.Sub(since).Round(time.Second), orphanBound)
		}
	}
	for pid := range w.orphanSince {
		if !alive[pid] {
			delete(w.orphanSince, pid)
		}
	}
	s.check("no process outlives its run beyond its bound (scans)", 1)
}

// checkDeadOwners reads the resources' holders: a lease whose declared
// owner (pid and governor pid, by identity) is dead must be gone within
// its TTL (no renewal can come) plus a second of polling.
func (s *soak) checkDeadOwners(ctx context.Context, w *watch) {
	if w.b == nil {
		st := connect.Store{Backend: "file", Dir: s.st.dir(), LossQuarantine: true}
		if u := s.st.url(); u != "" {
			st = connect.Store{Backend: "redis", RedisURL: u, LossQuarantine: true}
		}
		octx, cancel := context.WithTimeout(ctx, 3*time.Second)
		b, err := st.Open(octx, nil)
		cancel()
		if err != nil {
			return
		}
		w.b = b
	}
	now := time.Now()
	listed := map[string]bool{}
	for _, r := range []string{resHeavy, resShell, resShared, resProvider} {
		rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		st, err := w.b.Status(rctx, governor.Key{Project: project, Resource: r})
		cancel()
		if err != nil {
			continue
		}
		s.check("no lease held after its owner's death beyond the TTL (reads)", 1)
		s.checkOrder(w, r, st)
		if r == resProvider {
			s.noteShares(w, st)
		}
		for _, h := range st.Holders {
			listed[h.LeaseID] = true
			if h.PID == 0 || proc.Check(h.PID, h.StartTime) != proc.Dead ||
				(h.GovernorPID != 0 && proc.Check(h.GovernorPID, h.GovernorStart) != proc.Dead) {
				delete(w.deadSince, h.LeaseID)
				continue
			}
			if h.RunID != "" && runIDAlive(h.RunID) {
				delete(w.deadSince, h.LeaseID)
				continue
			}
			since, ok := w.deadSince[h.LeaseID]
			if !ok {
				w.deadSince[h.LeaseID] = now
				continue
			}
			ttl := h.Expires.Sub(h.Heartbeat)
			if ttl <= 0 {
				ttl = leaseTTL
			}
			d := now.Sub(since)
			s.worstAt("longest listing of a lease after its owner's death (s)", d.Seconds())
			if d > ttl+2*time.Second && !w.deadBad[h.LeaseID] {
				w.deadBad[h.LeaseID] = true
				s.violate("dead owner", "%s: lease %s of pid %d (gpid %d, %s) still listed %v after its owner died (TTL %v)",
					r, h.LeaseID, h.PID, h.GovernorPID, h.Command, d.Round(100*time.Millisecond), ttl)
			}
		}
	}
	for id := range w.deadSince {
		if !listed[id] {
			delete(w.deadSince, id)
		}
	}
}

// runIDAlive reports whether a process carries run id in its
// GOVERNOR_RUN_IDS: a survivor of its tree keeps the lease, by design.
func runIDAlive(id string) bool {
	all, _ := proc.List()
	for _, p := range all {
		if proc.EnvListHas(p.PID, governor.EnvRunIDs, id) {
			return true
		}
	}
	return false
}

// sampleRSS records the RSS of the long-lived processes: serve, the
// bridges and the clients.
func (s *soak) sampleRSS(w *watch) {
	now := time.Now()
	for _, p := range s.scan() {
		switch p.kind {
		case "serve", "bridge", "python", "node":
		default:
			continue
		}
		_, pages, ok := cpuTicks(p.PID)
		if !ok {
			continue
		}
		k := fmt.Sprintf("%s/%d/%d", p.kind, p.PID, p.Start)
		ser := w.rss[k]
		if ser == nil {
			ser = &rssSeries{kind: p.kind, pid: p.PID, first: now}
			w.rss[k] = ser
		}
		ser.samples = append(ser.samples, pages*int64(os.Getpagesize()))
	}
}

// checkRSS judges every series of at least 12 samples (two minutes):
// the median of its last third against the median of its first third
// (after the first sample, the start-up): growth above 1.5x and 16 MiB
// is a leak.
func (s *soak) checkRSS(w *watch) {
	for k, ser := range w.rss {
		n := len(ser.samples)
		if n < 12 {
			continue
		}
		a := median(ser.samples[1 : 1+n/3])
		b := median(ser.samples[n-n/3:])
		growth := float64(b) / float64(a)
		s.worstAt("RSS growth of a long-lived process, last third / first third (ratio)", growth)
		s.check("RSS of serve, bridges and clients flat (series)", 1)
		if growth > 1.5 && b-a > 16<<20 {
			s.violate("leak", "%s: RSS %d KiB -> %d KiB over %d samples", k, a>>10, b>>10, n)
		}
	}
}

func median(v []int64) int64 {
	c := append([]int64(nil), v...)
	sort.Slice(c, func(i, j int) bool { return c[i] < c[j] })
	return c[len(c)/2]
}
