package bridge_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/governor-dev/governor/config"
	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/capacity"
	"github.com/governor-dev/governor/internal/bridge"
)

// BenchmarkBridgeVsLibrary runs, side by side in each iteration, one
// acquire+release pair through a bridge (its request handling, served
// on real pipes with the protocol's NDJSON, read by a minimal client)
// and the same pair through governor.Governor, on the same backend. It
// reports each one's time per pair and their ratio (bridge/library), so
// that the load of a shared machine weighs on both alike. The bridge's
// acquire fails if busy (a client's default: Python's slot without wait),
// or, in redis-wait, waits for its slot as the library's does (wait=True;
// provider calls): such an op may wait, so the bridge hands the reading
// of requests to another goroutine before it runs it.
//
//	GOVERNOR_REQUIRE_REDIS=1 go test -run '^$' -bench BridgeVsLibrary -benchtime 3000x ./internal/bridge/
func BenchmarkBridgeVsLibrary(b *testing.B) {
	b.Run("redis", func(b *testing.B) { benchBridgeVsLibrary(b, redisStore(b), "") })
	b.Run("redis-wait", func(b *testing.B) { benchBridgeVsLibrary(b, redisStore(b), `,"if_busy":"wait"`) })
	b.Run("file", func(b *testing.B) { benchBridgeVsLibrary(b, fileStore(b), "") })
}

func benchBridgeVsLibrary(b *testing.B, st store, ifBusy string) {
	c := startPiped(b, st)
	g, err := governor.New(st(b), governor.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	ctx := context.Background()
	bridgePair := func() {
		lease := c.call(`"acquire","args":{"resources":["b"],"limit":1` + ifBusy + `}`)
		c.call(`"release","args":{"lease":"` + lease + `"}`)
	}
	libraryPair := func() {
		l, err := g.Acquire(ctx, "l", governor.AcquireOptions{Limit: 1})
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(); err != nil {
			b.Fatal(err)
		}
	}
	inBridge, inLibrary := sideBySide(b, bridgePair, libraryPair)
	b.ReportMetric(float64(inBridge.Nanoseconds())/float64(b.N), "bridge-ns/pair")
	b.ReportMetric(float64(inLibrary.Nanoseconds())/float64(b.N), "library-ns/pair")
	b.ReportMetric(float64(inBridge)/float64(inLibrary), "bridge/library")
}

// sideBySide runs bridge and library once each to warm them
// (connections, scripts loaded), then b.N times each, one after the
// other, and returns the time each took.
func sideBySide(b *testing.B, bridge, library func()) (inBridge, inLibrary time.Duration) {
	bridge()
	library()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		bridge()
		t1 := time.Now()
		library()
		inBridge += t1.Sub(t0)
		inLibrary += time.Since(t1)
	}
	b.StopTimer()
	return inBridge, inLibrary
}

// pipedClient drives a bridge served on OS pipes, as a client process
// does, with as little work of its own as it can: it writes request
// lines and reads reply lines, skipping events.
type pipedClient struct {
	t      testing.TB
	in     *os.File
	out    *bufio.Reader
	nextID int
	buf    []byte
}

func startPiped(t testing.TB, st store) *pipedClient {
	t.Helper()
	return startPipedWith(t, st, governor.Options{})
}

// startPipedWith is startPiped with the Governor's options o (its PID
// and Session the client's).
func startPipedWith(t testing.TB, st store, o governor.Options) *pipedClient {
	t.Helper()
	return startPipedCatalog(t, st, o, emptyCatalog(t))
}

// startPipedCatalog is startPipedWith with the configuration cat.
func startPipedCatalog(t testing.TB, st store, o governor.Options, cat *config.Catalog) *pipedClient {
	t.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cfg := bridge.Config{
		Version: "bench",
		Open: func(ctx context.Context, pid int, session string) (*governor.Governor, error) {
			o.PID, o.Session = pid, session
			return governor.New(st(t), o)
		},
		Acquire:        bridge.AcquirePipeline(cat),
		ProviderLimits: func(name string) governor.ProviderLimits { p, _ := cat.Provider(name); return p.Limits },
	}
	done := make(chan error, 1)
	go func() {
		err := bridge.Serve(context.Background(), inR, outW, cfg)
		outW.Close()
		done <- err
	}()
	c := &pipedClient{t: t, in: inW, out: bufio.NewReaderSize(outR, 64<<10)}
	t.Cleanup(func() {
		inW.Close()
		_, _ = io.Copy(io.Discard, outR)
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		inR.Close()
		outR.Close()
	})
	c.call(`"hello","args":{"protocol":1,"client":"bench","pid":` + strconv.Itoa(os.Getpid()) + `}`)
	return c
}

// call sends {"id":N,"op":REST} and returns the reply's lease, if any,
// failing on an error reply.
func (c *pipedClient) call(rest string) string {
	c.t.Helper()
	c.send(rest)
	want := []byte(`{"id":` + strconv.Itoa(c.nextID) + `,"ok":`)
	for {
		line, err := c.out.ReadSlice('\n')
		if err != nil {
			c.t.Fatal(err)
		}
		if !bytes.HasPrefix(line, want) {
			continue // an event, or the reply to an earlier request
		}
		if !bytes.HasPrefix(line[len(want):], []byte("true")) {
			c.t.Fatalf("%s: %s", rest, line)
		}
		_, lease, ok := bytes.Cut(line, []byte(`"lease":"`))
		if !ok {
			return ""
		}
		lease, _, _ = bytes.Cut(lease, []byte(`"`))
		return string(lease)
	}
}

// BenchmarkBridgeVsLibrary50 is BenchmarkBridgeVsLibrary with 50 pairs at
// once in each iteration: 50 acquires written together (as 50 promises
// or threads of one client send them), then their 50 releases, through a
// bridge; and 50 goroutines each taking a pair through the library. It
// reports pairs per second of each and their ratio (library/bridge: how
// many times the bridge's time a burst takes):
//
//	GOVERNOR_REQUIRE_REDIS=1 go test -run '^$' -bench BridgeVsLibrary50 -benchtime 200x ./internal/bridge/
func BenchmarkBridgeVsLibrary50(b *testing.B) {
	b.Run("redis", func(b *testing.B) { benchBurst(b, redisStore(b), 50) })
}

func benchBurst(b *testing.B, st store, n int) {
	c := startPiped(b, st)
	g, err := governor.New(st(b), governor.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	ctx := context.Background()
	limit := strconv.Itoa(n)
	bridgeBurst := func() {
		leases := c.burst(n, func(int) string { return `"acquire","args":{"resources":["b"],"limit":` + limit + `}` })
		c.burst(n, func(i int) string { return `"release","args":{"lease":"` + leases[i] + `"}` })
	}
	libraryBurst := func() {
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				l, err := g.Acquire(ctx, "l", governor.AcquireOptions{Limit: n})
				if err != nil {
					b.Error(err)
					return
				}
				if err := l.Release(); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
	}
	inBridge, inLibrary := sideBySide(b, bridgeBurst, libraryBurst)
	pairs := float64(n * b.N)
	b.ReportMetric(pairs/inBridge.Seconds(), "bridge-pairs/s")
	b.ReportMetric(pairs/inLibrary.Seconds(), "library-pairs/s")
	b.ReportMetric(float64(inBridge)/float64(inLibrary), "bridge/library")
}

// burst writes n requests {"id":N,"op":req(i)} in one write and returns
// the lease of each reply, in request order, failing on an error reply.
func (c *pipedClient) burst(n int, req func(i int) string) []string {
	c.t.Helper()
	first := c.nextID + 1
	c.buf = c.buf[:0]
	for i := range n {
		c.nextID++
		c.buf = append(append(append(append(c.buf, `{"id":`...), strconv.Itoa(c.nextID)...), `,"op":`...), req(i)...)
		c.buf = append(c.buf, "}\n"...)
	}
	if _, err := c.in.Write(c.buf); err != nil {
		c.t.Fatal(err)
	}
	leases := make([]string, n)
	for got := 0; got < n; {
		line, err := c.out.ReadSlice('\n')
		if err != nil {
			c.t.Fatal(err)
		}
		rest, ok := bytes.CutPrefix(line, []byte(`{"id":`))
		if !ok {
			continue // an event
		}
		num, rest, _ := bytes.Cut(rest, []byte(","))
		id, err := strconv.Atoi(string(num))
		if err != nil || id < first || id >= first+n {
			c.t.Fatalf("reply %s", line)
		}
		if !bytes.HasPrefix(rest, []byte(`"ok":true`)) {
			c.t.Fatalf("reply %s", line)
		}
		if _, lease, ok := bytes.Cut(rest, []byte(`"lease":"`)); ok {
			lease, _, _ = bytes.Cut(lease, []byte(`"`))
			leases[id-first] = string(lease)
		}
		got++
	}
	return leases
}

// BenchmarkBridgeHandOff is the hand-off between two requests of one
// client sharing its bridge (Python threads, TypeScript promises): an
// acquire waits (queued) while another holds the slot; the time from the
// holder's release being written to the waiter's grant being read, as
// p50 and p99 in milliseconds:
//
//	GOVERNOR_REQUIRE_REDIS=1 go test -run '^$' -bench BridgeHandOff -benchtime 300x ./internal/bridge/
func BenchmarkBridgeHandOff(b *testing.B) {
	c := startPiped(b, redisStore(b))
	held := c.call(`"acquire","args":{"resources":["baton"],"limit":1}`)
	lats := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		waiter := c.send(`"acquire","args":{"resources":["baton"],"limit":1,"if_busy":"wait"}`)
		c.until(func(line []byte) bool { return bytes.HasPrefix(line, []byte(`{"event":"queued"`)) })
		start := time.Now()
		release := c.send(`"release","args":{"lease":"` + held + `"}`)
		var at time.Time
		for n := 0; n < 2; n++ {
			line := c.until(func(line []byte) bool {
				return bytes.HasPrefix(line, c.replyPrefix(waiter)) || bytes.HasPrefix(line, c.replyPrefix(release))
			})
			if !bytes.Contains(line, []byte(`"ok":true`)) {
				b.Fatalf("reply %s", line)
			}
			if bytes.HasPrefix(line, c.replyPrefix(waiter)) {
				at = time.Now()
				_, lease, _ := bytes.Cut(line, []byte(`"lease":"`))
				lease, _, _ = bytes.Cut(lease, []byte(`"`))
				held = string(lease)
			}
		}
		lats = append(lats, at.Sub(start))
	}
	b.StopTimer()
	slices.Sort(lats)
	b.ReportMetric(float64(lats[len(lats)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lats[len(lats)*99/100].Microseconds())/1000, "p99-ms")
}

// send writes {"id":N,"op":REST} and returns N.
func (c *pipedClient) send(rest string) int {
	c.t.Helper()
	c.nextID++
	c.buf = append(append(append(append(c.buf[:0], `{"id":`...), strconv.Itoa(c.nextID)...), `,"op":`...), rest...)
	c.buf = append(c.buf, "}\n"...)
	if _, err := c.in.Write(c.buf); err != nil {
		c.t.Fatal(err)
	}
	return c.nextID
}

func (c *pipedClient) replyPrefix(id int) []byte { return []byte(`{"id":` + strconv.Itoa(id) + `,`) }

// until reads lines until one matches, and returns a copy of it.
func (c *pipedClient) until(match func([]byte) bool) []byte {
	c.t.Helper()
	for {
		line, err := c.out.ReadSlice('\n')
		if err != nil {
			c.t.Fatal(err)
		}
		if match(line) {
			return bytes.Clone(line)
		}
	}
}

// BenchmarkCapacityPair is issue 44's local grant through the bridge,
// on OS pipes: a slot granted from the bridge's capacity share, its
// acquire waited for and its release not (noreply), beside a request
// that touches no backend (the floor of one round trip):
//
//	go test -run '^$' -bench CapacityPair -benchtime 20000x ./internal/bridge/
func BenchmarkCapacityPair(b *testing.B) {
	c := startPipedWith(b, fileStore(b), governor.Options{Capacity: map[string]capacity.Config{"hot": {}}})
	pair := func() {
		lease := c.call(`"acquire","args":{"resources":["hot"],"limit":512,"if_busy":"wait"}`)
		c.send(`"release","args":{"lease":"` + lease + `"},"noreply":true`)
	}
	capacityPair(b, c, pair)
}

// BenchmarkCapacityProviderPair is BenchmarkCapacityPair through a
// provider gate, as the clients' provider.run makes it: provider_acquire
// waited for, then provider_report with release (the outcome, no
// usage) not:
//
//	go test -run '^$' -bench CapacityProviderPair -benchtime 20000x ./internal/bridge/
func BenchmarkCapacityProviderPair(b *testing.B) {
	c := startPipedCatalog(b, fileStore(b), governor.Options{Capacity: map[string]capacity.Config{"provider:bench": {}}},
		catalogOf(b, "providers:\n  bench: {max_concurrency: 512, capacity: true}\n"))
	pair := func() {
		lease := c.call(`"provider_acquire","args":{"provider":"bench","if_busy":"wait"}`)
		c.send(`"provider_report","args":{"lease":"` + lease + `","outcome":"ok","release":true},"noreply":true`)
	}
	capacityPair(b, c, pair)
}

// capacityPair times pair beside a request that touches no backend.
func capacityPair(b *testing.B, c *pipedClient, pair func()) {
	noop := func() { c.call(`"cancel_request","args":{"request":1099511627776}`) }
	inPair, inNoop := sideBySide(b, pair, noop)
	b.ReportMetric(float64(inPair.Nanoseconds())/float64(b.N), "pair-ns")
	b.ReportMetric(float64(inNoop.Nanoseconds())/float64(b.N), "noop-ns")
	b.ReportMetric(float64(inPair)/float64(inNoop), "pair/noop")
}
