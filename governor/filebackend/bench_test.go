package filebackend_test

import (
	"context"
	"io"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/filebackend"
	"github.com/governor-dev/governor/governor/histogram"
)

// BenchmarkAcquireRelease: one uncontended acquire+release pair on the
// file backend, beside flock(1) running `true` under a lock (what a
// shell script would do without governor), in the same run.
func BenchmarkAcquireRelease(b *testing.B) {
	b.Run("filebackend", func(b *testing.B) {
		be := open(b, b.TempDir(), filebackend.Options{})
		key := governor.Key{Project: "bench", Resource: "heavy"}
		ctx := context.Background()
		b.ResetTimer()
		for b.Loop() {
			r := req(key, 1, 1, governor.Fail)
			res, err := be.Acquire(ctx, r)
			if err != nil || res.Outcome != governor.Granted {
				b.Fatal(res.Outcome, err)
			}
			if err := be.Release(ctx, key, r.ID, ""); err != nil {
				b.Fatal(err)
			}
		}
	})
	// 8 Backends, as 8 processes would, on one resource of 8 slots.
	b.Run("filebackend-8-backends", func(b *testing.B) {
		dir := b.TempDir()
		key := governor.Key{Project: "bench", Resource: "run"}
		var next atomic.Int64
		var bes []*filebackend.Backend
		for i := 0; i < 8; i++ {
			bes = append(bes, open(b, dir, filebackend.Options{}))
		}
		b.SetParallelism(max(1, 8/runtime.GOMAXPROCS(0)))
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			be := bes[next.Add(1)%8]
			ctx := context.Background()
			for pb.Next() {
				r := req(key, 8, 1, governor.Fail)
				res, err := be.Acquire(ctx, r)
				if err != nil || res.Outcome != governor.Granted {
					b.Error(res.Outcome, err)
					return
				}
				if err := be.Release(ctx, key, r.ID, ""); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("flock(1)", func(b *testing.B) {
		path, err := exec.LookPath("flock")
		if err != nil {
			b.Skip("flock(1) not installed")
		}
		file := filepath.Join(b.TempDir(), "lock")
		b.ResetTimer()
		for b.Loop() {
			if err := exec.Command(path, file, "true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkEightProcesses: eight OS processes each take and free one
// exclusive slot (limit 1, waiting their turn) through Governor, beside
// eight concurrent loops of `flock FILE true`, in the same run: pairs/s of
// the whole machine, b.N pairs in all.
//
//	go test -run '^$' -bench EightProcesses -benchtime 2000x ./governor/filebackend/
func BenchmarkEightProcesses(b *testing.B) {
	const procs = 8
	b.Run("filebackend", func(b *testing.B) {
		dir := b.TempDir()
		key := governor.Key{Project: "bench", Resource: "excl"}
		rounds := max(1, b.N/procs)
		var hs []*helper
		for i := 0; i < procs; i++ {
			h := startHelper(b, "pairs", dir, key, envRounds+"="+strconv.Itoa(rounds))
			hs = append(hs, h)
		}
		for _, h := range hs {
			if l := h.line(); l != "ready" {
				b.Fatalf("helper said %q, want ready", l)
			}
		}
		b.ResetTimer()
		for _, h := range hs {
			_, _ = io.WriteString(h.in, "go\n")
		}
		for _, h := range hs {
			if l := h.line(); l != "done" {
				b.Fatalf("helper said %q, want done", l)
			}
		}
		b.StopTimer()
		b.ReportMetric(float64(rounds*procs)/b.Elapsed().Seconds(), "pairs/s")
	})
	b.Run("flock(1)", func(b *testing.B) {
		path, err := exec.LookPath("flock")
		if err != nil {
			b.Skip("flock(1) not installed")
		}
		file := filepath.Join(b.TempDir(), "lock")
		rounds := max(1, b.N/procs)
		errs := make(chan error, procs)
		b.ResetTimer()
		for i := 0; i < procs; i++ {
			go func() {
				for j := 0; j < rounds; j++ {
					if err := exec.Command(path, file, "true").Run(); err != nil {
						errs <- err
						return
					}
				}
				errs <- nil
			}()
		}
		for i := 0; i < procs; i++ {
			if err := <-errs; err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		b.ReportMetric(float64(rounds*procs)/b.Elapsed().Seconds(), "pairs/s")
	})
}

// BenchmarkHandOff: the time from a holder's Release (one Backend) to the
// grant of the waiter at the head of the queue (a Governor on another
// Backend, woken through its pipe), as p50 and p99 in milliseconds.
func BenchmarkHandOff(b *testing.B) {
	dir := b.TempDir()
	key := governor.Key{Project: "bench", Resource: "heavy"}
	holder := open(b, dir, filebackend.Options{})
	g, err := governor.New(open(b, dir, filebackend.Options{}), governor.Options{Project: key.Project})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		r := req(key, 1, 1, governor.Fail)
		if res, err := holder.Acquire(ctx, r); err != nil || res.Outcome != governor.Granted {
			b.Fatal(res.Outcome, err)
		}
		queued := make(chan struct{})
		got := make(chan time.Time, 1)
		released := make(chan struct{})
		go func() {
			defer close(released)
			l, err := g.Acquire(ctx, key.Resource, governor.AcquireOptions{Limit: 1, Mode: governor.Wait,
				OnQueued: func(governor.Result) { close(queued) }})
			if err != nil {
				b.Error(err)
				close(got)
				return
			}
			got <- time.Now()
			if err := l.Release(); err != nil {
				b.Error(err)
			}
		}()
		<-queued
		start := time.Now()
		if err := holder.Release(ctx, key, r.ID, ""); err != nil {
			b.Fatal(err)
		}
		at, ok := <-got
		if !ok {
			b.FailNow()
		}
		lat = append(lat, at.Sub(start))
		<-released
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[(len(lat)*99)/100]), "p99-ms")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkObserve: one observation of a resource that has a holder (a
// governor run's wait histogram at its grant), as Observe writes it:
//
//	go test -run '^$' -bench Observe -benchtime 2000x ./governor/filebackend/
func BenchmarkObserve(b *testing.B) {
	be := open(b, b.TempDir(), filebackend.Options{})
	key := governor.Key{Project: "bench", Resource: "heavy"}
	ctx := context.Background()
	if res, err := be.Acquire(ctx, req(key, 1, 1, governor.Fail)); err != nil || res.Outcome != governor.Granted {
		b.Fatal(res.Outcome, err)
	}
	counts := make([]int64, len(histogram.Bounds(histogram.Wait))+1)
	counts[0] = 1
	b.ResetTimer()
	for b.Loop() {
		if err := be.Observe(ctx, key, histogram.Wait, counts, time.Millisecond); err != nil {
			b.Fatal(err)
		}
	}
}
