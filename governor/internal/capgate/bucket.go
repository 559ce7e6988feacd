package capgate

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/governor-dev/governor/governor/capacity"
)

// RateRefresh sends one refresh of a rate share (or, with Release, its
// end); the caller fills in the lease's ID, Secret and TTL.
type RateRefresh func(ctx context.Context, a capacity.RateAsk) (capacity.RateShare, error)

// BucketOptions configure a Bucket; the caller has checked them (0 <
// Refresh < Lease - Margin).
type BucketOptions struct {
	// Limit is the limit's requests per Period: no want passes it.
	Limit  int64
	Period time.Duration
	// Lease, Refresh and Margin are a Gate's (Options).
	Lease, Refresh, Margin time.Duration
	// Fatal tells a refresh's error that ends the bucket (a refusal).
	Fatal func(error) bool
	// First: the first refresh wants the whole limit (a bucket opened
	// by the request that needs it).
	First bool
}

// Bucket grants requests (or tokens) of a rate limit locally from a
// rate share (capacity.RateShare): a token bucket of the share's rate
// and burst that starts empty, refills only while the share's lease is
// valid on this process's clocks (as a Gate's) and no refresh is on its
// way, and drops the tokens above a new burst at once. Settle charges
// what a call used beyond its take (the bucket may go into debt, which
// a lapse or a new share keeps) or refunds it, up to the burst. A
// background refresh every Refresh reports what the process wants: the
// whole limit if a request found the bucket empty since the last one,
// else the rate it granted and a quarter more; sooner, at once, when the
// last answer said others wait and it wants less than it holds. Each
// refresh, and the release at Close, reports how many it granted since
// it opened (RateAsk.Granted). Its methods are safe for concurrent use.
type Bucket struct {
	send RateRefresh
	o    BucketOptions

	mu       sync.Mutex
	changed  chan struct{}
	rate     int64 // what refills: the share, 0 after a failed refresh
	held     int64 // the last answered share, reported as Held
	burst    int64
	entitled int64
	wanted   int64     // the last want reported
	tokens   float64   // below 0: a debt (Settle)
	last     time.Time // when tokens were last refilled
	token    int64
	sent     time.Time // send time of the last answered refresh
	deadline time.Time // sent + Lease - Margin (monotonic)
	since    time.Time // send time of the last refresh sent
	flying   bool
	granted  int64 // requests granted since the last refresh was sent
	total    int64 // requests granted since NewBucket: each refresh reports it (RateAsk.Granted)
	waited   bool  // a request found the bucket empty since then
	others   bool  // the last answer said others wait
	cooling  int   // Cool calls not yet done: answers grant nothing
	cools    int64 // Cool calls and their ends: an answer to a refresh sent before one grants nothing
	watch    *time.Timer
	err      error
	closed   bool

	kick chan struct{}
	stop chan struct{}
	done chan struct{}
}

// NewBucket opens a Bucket: it takes its first share at once (a
// newcomer's share may be 0 until others shrink) and refreshes it in the
// background until Close.
func NewBucket(ctx context.Context, o BucketOptions, send RateRefresh) (*Bucket, error) {
	b := &Bucket{send: send, o: o, changed: make(chan struct{}), kick: make(chan struct{}, 1), stop: make(chan struct{}),
		done: make(chan struct{}), since: time.Now()}
	b.waited = o.First
	if err := b.refresh(ctx); err != nil {
		return nil, err
	}
	go b.run()
	return b, nil
}

// Share is the share's rate and burst now, and the tokens in the bucket.
func (b *Bucket) Share() (rate, burst int64, tokens float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refillLocked(time.Now())
	return b.rate, b.burst, b.tokens
}

// refillLocked adds the tokens the share's rate gave since last, up to
// its burst; none while a refresh is on its way, and none (the bucket
// emptied, its debt kept) once the lease is not valid.
func (b *Bucket) refillLocked(now time.Time) {
	switch {
	case !valid(b.sent, b.deadline, now):
		b.tokens = min(b.tokens, 0)
	case !b.flying && b.rate > 0 && now.After(b.last):
		b.tokens = min(float64(b.burst), b.tokens+float64(b.rate)*float64(now.Sub(b.last))/float64(b.o.Period))
	}
	b.last = now
}

// Take takes n requests from the bucket, waiting under ctx for its
// tokens unless try: then an empty bucket is ErrFull, with the time
// its tokens take at the share's rate (0: unknown). n above the share's
// burst is taken from a full bucket, which it leaves in debt: so a
// call's estimate is never refused for its share's size.
func (b *Bucket) Take(ctx context.Context, n int64, try bool) (time.Duration, error) {
	b.mu.Lock()
	for {
		switch {
		case b.err != nil:
			defer b.mu.Unlock()
			return 0, b.err
		case b.closed:
			defer b.mu.Unlock()
			return 0, ErrClosed
		}
		now := time.Now()
		b.refillLocked(now)
		need := min(n, b.burst) // above the burst: a full bucket
		if b.tokens >= float64(n) || b.burst > 0 && b.tokens >= float64(need) {
			b.tokens -= float64(n)
			b.granted += n
			b.total += n
			b.mu.Unlock()
			return 0, nil
		}
		b.waited = true
		if b.wanted < b.o.Limit || b.rate < b.entitled {
			b.wake() // the backend may give more: tell it now
		}
		var after time.Duration
		if b.rate > 0 && b.burst > 0 && !b.flying && valid(b.sent, b.deadline, now) {
			after = time.Duration(math.Ceil((float64(need) - b.tokens) / float64(b.rate) * float64(b.o.Period)))
			after = min(max(after, time.Microsecond), time.Until(b.deadline))
		}
		if try {
			b.mu.Unlock()
			return after, ErrFull
		}
		ch := b.changed
		b.mu.Unlock()
		var tick <-chan time.Time
		var t *time.Timer
		if after > 0 {
			t = time.NewTimer(after)
			tick = t.C
		}
		select {
		case <-ch:
		case <-tick:
		case <-ctx.Done():
		}
		if t != nil {
			t.Stop()
		}
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		b.mu.Lock()
	}
}

func (b *Bucket) wake() {
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

func (b *Bucket) broadcastLocked() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// run refreshes every Refresh, or at once when woken, until Close.
func (b *Bucket) run() {
	every(b.o.Refresh, b.stop, b.kick, b.done, func() {
		ctx, cancel := context.WithTimeout(context.Background(), b.o.Refresh)
		_ = b.refresh(ctx) // an error stops the refill until the next answer
		cancel()
	})
}

// refresh sends one refresh and takes its answer.
func (b *Bucket) refresh(ctx context.Context) error {
	b.mu.Lock()
	sent := time.Now()
	b.refillLocked(sent)
	a := capacity.RateAsk{Want: b.wantLocked(sent), Granted: b.total}
	if valid(b.sent, b.deadline, sent) {
		a.Held, a.Token = b.held, b.token // else the lease may have expired
	}
	b.flying, b.granted, b.waited, b.since, b.wanted = true, 0, false, sent, a.Want
	cools := b.cools
	b.mu.Unlock()
	sh, err := b.send(ctx, a)
	b.mu.Lock()
	defer b.mu.Unlock()
	defer b.broadcastLocked()
	b.refillLocked(time.Now()) // nothing accrues in flight; empty if lapsed
	b.flying = false
	if err != nil {
		// The backend may have shrunk the share: grant nothing more until
		// an answer says what it is.
		b.rate, b.tokens = 0, min(b.tokens, 0)
		if b.o.Fatal != nil && b.o.Fatal(err) {
			b.err = err
		}
		return err
	}
	b.rate, b.held, b.burst, b.entitled, b.token = sh.Rate, sh.Rate, sh.Burst, sh.Entitled, sh.Token
	b.tokens = min(b.tokens, float64(sh.Burst))
	if b.cooling > 0 || b.cools != cools {
		// A cool-off this process saw: its share may not know it yet.
		b.rate, b.tokens = 0, 0
	}
	b.sent, b.deadline = sent, sent.Add(b.o.Lease-b.o.Margin)
	b.others = sh.Waiting
	b.watchLocked()
	return nil
}

// watchLocked arms the check for giving the share back early: while the
// last answer said others wait, every tenth of the refresh interval or
// of the limit's period (the shorter), giveBack refreshes at once when
// the process wants less than it holds.
func (b *Bucket) watchLocked() {
	if b.watch != nil {
		b.watch.Stop()
	}
	if b.others && b.held > 0 && !b.closed {
		b.watch = time.AfterFunc(min(b.o.Refresh, b.o.Period)/10, b.giveBack)
	}
}

// giveBack wakes the refresh when the process wants less than its share
// (no request found the bucket empty, and the rate granted since the
// last refresh, a quarter more, is below it), else checks again later.
func (b *Bucket) giveBack() {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.closed || b.flying:
	case !b.waited && b.wantLocked(time.Now()) < b.held:
		b.wake()
	default:
		b.watchLocked()
	}
}

// Cool stops granting at once, for a rate-limit signal this process
// saw: the bucket is emptied and refills from no answer until done is
// called (once the cool-off is recorded by the backend, or failed to
// be), which refreshes it at once; a refresh sent after that gets the
// share the cool-off leaves (0 while it lasts).
func (b *Bucket) Cool() (done func()) {
	b.mu.Lock()
	b.cooling++
	b.cools++
	b.rate, b.tokens = 0, min(b.tokens, 0) // a debt (Settle) kept
	b.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			b.cooling--
			b.cools++
			b.mu.Unlock()
			b.wake()
		})
	}
}

// Settle charges delta more tokens (negative: refunds) after a call
// that took its estimate: the bucket may go into debt (below 0), and a
// refund fills it up to its burst. It changes nothing once closed.
func (b *Bucket) Settle(delta int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.refillLocked(time.Now())
	b.tokens = min(b.tokens-float64(delta), float64(b.burst))
	b.granted += max(delta, 0) // a refund still wanted the estimate
	if delta < 0 {
		b.broadcastLocked()
	}
}

// wantLocked is the rate the process wants at now: the whole limit if a
// request found the bucket empty since the last refresh, else the rate
// it granted since and a quarter more.
func (b *Bucket) wantLocked(now time.Time) int64 {
	if b.waited {
		return b.o.Limit
	}
	d := now.Sub(b.since)
	if b.granted <= 0 || d <= 0 {
		return 0
	}
	return min(b.o.Limit, int64(math.Ceil(float64(b.granted)*float64(b.o.Period)/float64(d)*1.25)))
}

// Close stops granting and the refreshes and gives the share back.
func (b *Bucket) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	close(b.stop)
	if b.watch != nil {
		b.watch.Stop()
	}
	b.broadcastLocked()
	total := b.total // no Take after closed
	b.mu.Unlock()
	<-b.done
	ctx, cancel := context.WithTimeout(context.Background(), b.o.Refresh)
	defer cancel()
	_, err := b.send(ctx, capacity.RateAsk{Release: true, Granted: total})
	return err
}
