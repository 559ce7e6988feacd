package capgate

import (
	"context"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor/capacity"
)

// asks is a fake RateRefresh: it hands each ask to the test and answers
// with answer.
type asks struct {
	ch     chan capacity.RateAsk
	answer func(capacity.RateAsk) capacity.RateShare
}

func (f *asks) send(_ context.Context, a capacity.RateAsk) (capacity.RateShare, error) {
	if !a.Release {
		f.ch <- a
	}
	return f.answer(a), nil
}

// next is the next refresh asked, failing the test if none comes by
// deadline.
func (f *asks) next(t *testing.T, what string, deadline time.Duration) capacity.RateAsk {
	t.Helper()
	select {
	case a := <-f.ch:
		return a
	case <-time.After(deadline):
		t.Fatalf("%s: no refresh within %v", what, deadline)
		return capacity.RateAsk{}
	}
}

// TestBucketGivesBackWhenOthersWait: a share whose answer said others
// wait, and whose process takes nothing from it, refreshes at once
// (within a tenth of its interval) wanting less than it holds, not at
// its next interval (30 s here, past the test's deadline).
func TestBucketGivesBackWhenOthersWait(t *testing.T) {
	f := &asks{ch: make(chan capacity.RateAsk, 16), answer: func(a capacity.RateAsk) capacity.RateShare {
		return capacity.RateShare{Rate: min(a.Want, 50), Burst: min(a.Want, 50), Entitled: 50, Waiting: true, Token: 1}
	}}
	o := BucketOptions{Limit: 100, Period: time.Second, Lease: time.Minute, Refresh: 30 * time.Second, Margin: 6 * time.Second, First: true}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan *Bucket, 1)
	go func() {
		b, err := NewBucket(ctx, o, f.send)
		if err != nil {
			t.Error(err)
		}
		done <- b
	}()
	if a := f.next(t, "the first refresh", time.Minute); a.Want != 100 {
		t.Fatalf("the first refresh wants %d, not the limit", a.Want)
	}
	b := <-done
	if b == nil {
		return
	}
	defer b.Close()
	a := f.next(t, "a share of 50 that others wait for, taken from by no one", 20*time.Second)
	if a.Want >= a.Held || a.Held != 50 {
		t.Fatalf("the early refresh wants %d and holds %d; want less than 50 held", a.Want, a.Held)
	}
}

// TestBucketCoolIgnoresEarlierAnswers: once cooled (a rate-limit signal
// this process saw), the bucket grants nothing, and the answer to a
// refresh sent before the cool-off was recorded, which may not know of
// it, refills nothing.
func TestBucketCoolIgnoresEarlierAnswers(t *testing.T) {
	hold := make(chan struct{})
	f := &asks{ch: make(chan capacity.RateAsk, 16), answer: func(a capacity.RateAsk) capacity.RateShare {
		if a.Held > 0 {
			<-hold // the refresh in flight when the signal comes
		}
		return capacity.RateShare{Rate: 100, Burst: 100, Entitled: 100, Token: 1}
	}}
	o := BucketOptions{Limit: 100, Period: time.Millisecond, Lease: time.Hour, Refresh: 30 * time.Minute, Margin: 6 * time.Minute, First: true}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := NewBucket(ctx, o, f.send)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	f.next(t, "the first refresh", time.Minute)
	if _, err := b.Take(ctx, 1, false); err != nil {
		t.Fatalf("before the signal: %v", err)
	}
	flying := make(chan error, 1)
	go func() { flying <- b.refresh(ctx) }()
	f.next(t, "the refresh in flight", time.Minute)
	b.Cool()()
	close(hold)
	if err := <-flying; err != nil {
		t.Fatal(err)
	}
	if rate, _, tokens := b.Share(); rate != 0 || tokens != 0 {
		t.Fatalf("after the signal, the earlier refresh answered: rate %d, %v tokens; want none", rate, tokens)
	}
	if _, err := b.Take(ctx, 1, true); err != ErrFull {
		t.Fatalf("a take after the signal: %v, want ErrFull", err)
	}
}
