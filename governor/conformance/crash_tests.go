package conformance

import (
	"errors"
	"os/exec"
	"sync"
	"testing"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/proc"
)

// crashedHolderOwnerAlive: the process that held a lease (its backend)
// dies while the owner the lease declares, another process on this host,
// lives on: a `governor bridge` SIGKILLed under its client, which does the
// protected work and learns of the loss only when it next looks. The lease
// is not reclaimed while that owner lives (it lasts until its TTL), on
// every backend; once the owner is dead too, it is reclaimed at once. The
// file backend once took its unlocked lease file for the owner's death and
// granted the slot beside the client's work (the soak, file backend).
func (s *suite) crashedHolderOwnerAlive(t *testing.T) {
	decl, kill := ownerProcess(t)
	b, key := s.open(t, "crashed")
	g := newGovernor(t, s.h.Open(t), governor.Options{Project: key.Project})
	r := ownedReq(key, 1, 1, governor.Fail)
	r.Declaration = decl
	holder := s.h.Open(t)
	mustAcquire(t, holder, r, governor.Granted)
	s.crash(t, holder)

	if _, err := g.Acquire(ctxT(t), key.Resource, governor.AcquireOptions{Limit: 1}); !errors.Is(err, governor.ErrBusy) {
		t.Fatalf("acquire while the declared owner lives, its holder process dead: %v, want busy", err)
	}
	if st := mustStatus(t, b, key); st.Counters.ReclaimedDead != 0 || len(st.Holders) != 1 {
		t.Fatalf("after the refused acquire: %+v", st)
	}

	kill()
	l, err := g.Acquire(ctxT(t), key.Resource, governor.AcquireOptions{Limit: 1})
	if err != nil {
		t.Fatalf("acquire once the declared owner is dead: %v", err)
	}
	_ = l.Release()
	if st := mustStatus(t, b, key); st.Counters.ReclaimedDead != 1 {
		t.Fatalf("reclaim not counted: %+v", st.Counters)
	}
}

// ownerProcess starts a process on this host that a lease declares as
// its owner (a `governor bridge`'s client), and returns its declaration
// and a func that kills it and waits for its end.
func ownerProcess(t *testing.T) (governor.Declaration, func()) {
	owner := exec.Command("sleep", "600")
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	kill := func() {
		once.Do(func() {
			_ = owner.Process.Kill()
			_ = owner.Wait()
		})
	}
	t.Cleanup(kill)
	start, err := proc.StartTime(owner.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return governor.Declaration{Session: "client", HostID: proc.Current().HostID, PID: owner.Process.Pid, StartTime: start,
		Command: "governor bridge"}, kill
}

// crash ends b as the death of its process would (Harness.Crash), or
// closes it.
func (s *suite) crash(t *testing.T, b governor.Backend) {
	if s.h.Crash != nil {
		s.h.Crash(t, b)
		return
	}
	_ = b.Close()
}
