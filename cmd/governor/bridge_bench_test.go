package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkBridgeStart measures `governor bridge` from its start to its
// hello reply, beside `governor --version` (the binary's start alone),
// in turns, on the file backend; it reports each one's median (ms) and,
// on Linux, the bridge's RSS at rest after 300 pairs (MiB, and how much
// of it is anonymous memory, the rest being the binary's own pages,
// shared by every bridge). The default build (cgo where a C compiler is
// found), the static one (CGO_ENABLED=0, stripped: the release archives')
// and the static one without serve (-tags governor_noserve: the wheels'
// and npm packages') take turns in each iteration:
//
//	go test -run '^$' -bench BridgeStart -benchtime 30x ./cmd/governor/
func BenchmarkBridgeStart(b *testing.B) {
	dir := b.TempDir()
	nocgo, noserve := staticBuilds(b, dir)
	cfg := filepath.Join(dir, "exec-defaults.yaml")
	if err := os.WriteFile(cfg, []byte("project: bench\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	builds := []*bridgeStart{{name: "", bin: governorBin(b)}, {name: "nocgo-", bin: nocgo}, {name: "noserve-", bin: noserve}}
	for i := 0; i < b.N; i++ {
		for k := range builds {
			builds[(i+k)%len(builds)].once(b, cfg, filepath.Join(dir, "state"), i == b.N-1)
		}
	}
	for _, s := range builds {
		b.ReportMetric(median(s.hellos), s.name+"hello-ms")
		b.ReportMetric(median(s.versions), s.name+"version-ms")
		if s.rss > 0 {
			b.ReportMetric(s.rss, s.name+"rss-MiB")
			b.ReportMetric(s.anon, s.name+"anon-MiB")
		}
	}
}

// bridgeStart is what BenchmarkBridgeStart measured of one build.
type bridgeStart struct {
	name, bin        string
	hellos, versions []float64
	rss, anon        float64
}

// once starts a bridge, says hello, and with last takes 300 pairs and
// reads its memory at rest; then it times --version.
func (s *bridgeStart) once(b *testing.B, cfg, state string, last bool) {
	start := time.Now()
	c := exec.Command(s.bin, "--config", cfg, "--backend", "file", "--dir", state, "bridge")
	c.Env = append(cleanEnv(), "GOMAXPROCS=1") // as the clients spawn it
	in, err := c.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	outp, err := c.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := c.Start(); err != nil {
		b.Fatal(err)
	}
	out := bufio.NewReader(outp)
	call := func(id int, req string) string {
		if _, err := fmt.Fprintf(in, `{"id":%d,%s}`+"\n", id, req); err != nil {
			b.Fatal(err)
		}
		for {
			line, err := out.ReadString('\n')
			if err != nil {
				b.Fatal(err)
			}
			if strings.HasPrefix(line, `{"id":`+strconv.Itoa(id)+`,"ok":true`) {
				return line
			}
			if strings.HasPrefix(line, `{"id":`+strconv.Itoa(id)+`,`) {
				b.Fatalf("%s: %s", req, line)
			}
		}
	}
	call(1, `"op":"hello","args":{"protocol":1,"client":"bench","pid":`+strconv.Itoa(os.Getpid())+`}`)
	s.hellos = append(s.hellos, float64(time.Since(start))/float64(time.Millisecond))
	if last && runtime.GOOS == "linux" {
		for k := 0; k < 300; k++ {
			res := call(2+2*k, `"op":"acquire","args":{"resources":["r"],"limit":1}`)
			_, lease, _ := strings.Cut(res, `"lease":"`)
			lease, _, _ = strings.Cut(lease, `"`)
			call(3+2*k, `"op":"release","args":{"lease":"`+lease+`"}`)
		}
		time.Sleep(2 * time.Second) // at rest: over a second without a request (then the bridge frees its garbage)
		s.rss, s.anon = memOf(b, c.Process.Pid)
	}
	in.Close()
	_, _ = io.Copy(io.Discard, out)
	if err := c.Wait(); err != nil {
		b.Fatal(err)
	}
	start = time.Now()
	v := exec.Command(s.bin, "--version")
	v.Env = cleanEnv()
	if err := v.Run(); err != nil {
		b.Fatal(err)
	}
	s.versions = append(s.versions, float64(time.Since(start))/float64(time.Millisecond))
}

// memOf is pid's resident memory and its anonymous part, in MiB.
func memOf(b *testing.B, pid int) (rss, anon float64) {
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range strings.Split(string(st), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb / 1024
		case "RssAnon:":
			anon = kb / 1024
		}
	}
	return rss, anon
}
