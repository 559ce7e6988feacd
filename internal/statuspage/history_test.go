package statuspage

import (
	"fmt"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
)

// Polls fold into Step buckets (the most used, the most waiters, any
// cool-off), an hour is kept and no more, and at most MaxTracked
// resources are.
func TestHistoryBucketsAndBounds(t *testing.T) {
	h := NewHistory(nil)
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	st := func(name string, used, waiters int, coolOff bool) governor.Status {
		s := governor.Status{Key: governor.Key{Resource: name}, Limit: 2, Used: used, Now: t0}
		for range waiters {
			s.Waiters = append(s.Waiters, governor.Waiter{Weight: 1})
		}
		if coolOff {
			s.CoolOff = t0.Add(time.Hour)
		}
		return s
	}
	h.record(t0, []governor.Status{st("gpu", 1, 0, false)})
	h.record(t0.Add(time.Second), []governor.Status{st("gpu", 2, 3, true)})
	h.record(t0.Add(2*time.Second), []governor.Status{st("gpu", 0, 1, false)})
	got := h.read([]string{"gpu", "gpu"})
	if len(got.Resources) != 1 || len(got.Resources[0].Points) != 1 {
		t.Fatalf("three polls in one step: %+v; want one resource, one point", got)
	}
	if p := got.Resources[0].Points[0]; p.Used != 2 || p.Waiters != 3 || !p.CoolOff || p.Limit != 2 || !p.At.Equal(t0) {
		t.Errorf("the bucket: %+v; want the most used (2), the most waiters (3), cool-off", p)
	}
	for i := range 2 * int(Window/Step) {
		h.record(t0.Add(time.Duration(i)*Step), []governor.Status{st("gpu", 1, 0, false)})
	}
	ps := h.read(nil).Resources[0].Points
	if n := len(ps); n > int(Window/Step)+1 {
		t.Errorf("after two hours: %d points; want at most an hour's (%d)", n, int(Window/Step)+1)
	}
	if cap(h.res["gpu"].points) > 4*int(Window/Step) {
		t.Errorf("the points' memory grew to %d", cap(h.res["gpu"].points))
	}
	var many []governor.Status
	for i := range MaxTracked + 10 {
		many = append(many, st(fmt.Sprintf("r%04d", i), 0, 0, false))
	}
	h.record(t0.Add(3*Window), many)
	if n := len(h.res); n > MaxTracked {
		t.Errorf("%d resources kept; want at most %d", n, MaxTracked)
	}
}
