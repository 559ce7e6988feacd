package filebackend_test

import (
	"errors"
	"os/exec"
	"testing"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/filebackend"
	"github.com/governor-dev/governor/governor/proc"
)

// TestLockedLeaseFileWinsOverDeadPID: a holder whose declared pid is dead
// but whose lease file is still locked (a process of its tree inherited
// it) is alive: a Governor on this host neither reclaims nor takes it
// over. Once the file is no longer locked, it is reclaimed at once.
func TestLockedLeaseFileWinsOverDeadPID(t *testing.T) {
	dir := t.TempDir()
	holder := open(t, dir, filebackend.Options{})
	key := governor.Key{Project: "p", Resource: "r"}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	h := req(key, 1, 1, governor.Fail)
	h.Declaration = governor.Declaration{Session: "gone", HostID: proc.HostID(), PID: dead.Process.Pid}
	mustAcquire(t, holder, h, governor.Granted)

	g, err := governor.New(open(t, dir, filebackend.Options{}), governor.Options{Project: "p"})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if _, err := g.Acquire(ctxT(t), "r", governor.AcquireOptions{Limit: 1}); !errors.Is(err, governor.ErrBusy) {
		t.Fatalf("acquire while the lease file is locked: %v, want busy", err)
	}
	if _, err := g.Takeover(ctxT(t), "r", 1, governor.TakeoverOptions{LeaseID: h.ID}); !errors.Is(err, governor.ErrOwnerAlive) {
		t.Fatalf("takeover while the lease file is locked: %v, want owner alive", err)
	}
	if st := mustStatus(t, holder, key); st.Counters.ReclaimedDead != 0 || len(st.Holders) != 1 {
		t.Fatalf("after the refused acquire: %+v", st)
	}

	// The holder's process is gone (its backend closed): the file is no
	// longer locked, and the dead pid is proof enough.
	_ = holder.Close()
	l, err := g.Acquire(ctxT(t), "r", governor.AcquireOptions{Limit: 1})
	if err != nil {
		t.Fatalf("acquire once the lease file is free: %v", err)
	}
	_ = l.Release()
}
