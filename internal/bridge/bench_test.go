package bridge_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/bridge"
)

// BenchmarkBridgeVsLibrary runs, side by side in each iteration, one
// acquire+release pair through a bridge (its request handling, served
// on real pipes with the protocol's NDJSON, read by a minimal client)
// and the same pair through governor.Governor, on the same backend. It
// reports each one's time per pair and their ratio (bridge/library), so
// that the load of a shared machine weighs on both alike:
//
//	GOVERNOR_REQUIRE_REDIS=1 go test -run '^$' -bench BridgeVsLibrary -benchtime 3000x ./internal/bridge/
func BenchmarkBridgeVsLibrary(b *testing.B) {
	b.Run("redis", func(b *testing.B) { benchBridgeVsLibrary(b, redisStore(b)) })
	b.Run("file", func(b *testing.B) { benchBridgeVsLibrary(b, fileStore(b)) })
}

func benchBridgeVsLibrary(b *testing.B, st store) {
	c := startPiped(b, st)
	g, err := governor.New(st(b), governor.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	ctx := context.Background()
	bridgePair := func() {
		lease := c.call(`"acquire","args":{"resources":["b"],"limit":1}`)
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
	bridgePair() // warm both: connections, scripts loaded
	libraryPair()
	var inBridge, inLibrary time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		bridgePair()
		t1 := time.Now()
		libraryPair()
		inBridge += t1.Sub(t0)
		inLibrary += time.Since(t1)
	}
	b.StopTimer()
	b.ReportMetric(float64(inBridge.Nanoseconds())/float64(b.N), "bridge-ns/pair")
	b.ReportMetric(float64(inLibrary.Nanoseconds())/float64(b.N), "library-ns/pair")
	b.ReportMetric(float64(inBridge)/float64(inLibrary), "bridge/library")
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
			return governor.New(st(t), governor.Options{PID: pid, Session: session})
		},
		Acquire: bridge.AcquirePipeline(emptyCatalog(t)),
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
	c.nextID++
	c.buf = append(append(append(append(c.buf[:0], `{"id":`...), strconv.Itoa(c.nextID)...), `,"op":`...), rest...)
	c.buf = append(c.buf, "}\n"...)
	if _, err := c.in.Write(c.buf); err != nil {
		c.t.Fatal(err)
	}
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
