//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

var interruptSig = syscall.SIGINT

// adminLoop does an admin action every 3-8 s: a live limit on heavy (1
// to 3, or cleared), a pause of shared for up to 2 s then resume, a
// cancel of every waiter of a session that does not exist (nothing
// cancelled: exit 122) or of heavy's first waiter.
func (s *soak) adminLoop(ctx context.Context) {
	for sleepCtx(ctx, time.Duration(3000+s.intn(5000))*time.Millisecond) {
		switch s.intn(4) {
		case 0, 1:
			n := 1 + s.intn(3)
			args := []string{"limit", resHeavy, strconv.Itoa(n)}
			if s.intn(3) == 0 {
				n, args = limHeavy, []string{"limit", resHeavy, "--clear"}
			}
			before := mono()
			ok := s.admin(ctx, args...)
			s.limits.admin(resHeavy, n, limHeavy, before, mono(), ok)
		case 2:
			if s.admin(ctx, "pause", resShared) {
				sleepCtx(ctx, time.Duration(s.intn(2000))*time.Millisecond)
			}
			// Resumed whatever happens (a full disk, Redis down): a
			// resource left paused would starve the clients.
			for try := 0; try < 60 && !s.admin(context.Background(), "resume", resShared); try++ {
				time.Sleep(500 * time.Millisecond)
			}
		case 3:
			s.cancelOne(ctx)
		}
	}
}

// admin runs one admin command and reports whether it exited 0; -v
// logs it with when it started (a limit's change lands in between).
func (s *soak) admin(ctx context.Context, args ...string) bool {
	start := mono()
	c := s.gov(ctx, args...)
	var stderr bytes.Buffer
	c.Stderr = &stderr
	err := runCmd(c)
	s.exitOf("admin "+args[0], c, err, stderr.String())
	if s.o.verbose {
		code := -1
		if c.ProcessState != nil {
			code = c.ProcessState.ExitCode()
		}
		fmt.Printf("soak: %7.3fs admin %s: exit %d (started at %.3fs)\n", s.rel(mono()), strings.Join(args, " "), code, s.rel(start))
	}
	return err == nil
}

// cancelOne cancels the first waiter of heavy, if any.
func (s *soak) cancelOne(ctx context.Context) {
	c := s.gov(ctx, "--json", "slots", resHeavy)
	out, err := output(c)
	if err != nil {
		return
	}
	var v struct {
		Resources []struct {
			Waiters []struct {
				ID string `json:"id"`
			} `json:"waiters"`
		} `json:"resources"`
	}
	if json.Unmarshal(out, &v) != nil || len(v.Resources) == 0 || len(v.Resources[0].Waiters) == 0 {
		s.op("admin cancel: no waiter")
		return
	}
	s.admin(ctx, "cancel", resHeavy, "--waiter", v.Resources[0].Waiters[0].ID)
}

// badInputs are command lines and configs no governor may accept: each
// must exit 125 (or 2 for a flag the parser refuses) with a message,
// never crash nor change state.
var badInputs = [][]string{
	{"run", "--resource", "heavy", "--limit", "0", "--", "true"},
	{"run", "--resource", "heavy", "--ttl", "-1s", "--", "true"},
	{"run", "--resource", "", "--", "true"},
	{"run", "--resource", "heavy:abc", "--", "true"},
	{"acquire", "heavy", "--weight", "-3"},
	{"acquire", "no\nsuch"},
	{"renew", "heavy@nosuchlease.nosecret"},
	{"release", "garbage"},
	{"limit", "heavy", "0"},
	{"limit", "heavy", "99999999"},
	{"pause"},
	{"cancel", "heavy"},
	{"run", "--wait-timeout", "forever", "--resource", "heavy", "--", "true"},
	{"--no-such-flag"},
	{"slots", "--json=maybe"},
}

// badConfigs are config files that must be refused.
var badConfigs = []string{
	"project: soak\nresources:\n  heavy: {limit: -1}\n",
	"project: soak\nlease:\n  ttl: banana\n",
	"project: [\n",
	"project: soak\nresources:\n  heavy: {limit: 1, nonsense: 3}\n",
	"\x00\x01\x02",
}

// badBridgeLines are lines a bridge must answer with an error (or
// ignore), never crash on.
var badBridgeLines = []string{
	"{", "null", "[]", "{\"op\":\"no-such-op\",\"id\":1}", "{\"op\":\"acquire\",\"id\":2,\"resources\":[\"\"]}",
	"{\"op\":\"acquire\",\"id\":3,\"resources\":[\"shared\"],\"weight\":-1}", strings.Repeat("x", 70000),
	"{\"op\":\"release\",\"id\":4,\"lease\":\"nope\"}", "\x00\xff\xfe",
}

// badInputLoop sends bad input every 2-5 s: a bad command line, a bad
// config, or a bridge fed garbage; each must end cleanly.
func (s *soak) badInputLoop(ctx context.Context) {
	for i := 0; sleepCtx(ctx, time.Duration(2000+s.intn(3000))*time.Millisecond); i++ {
		switch s.intn(3) {
		case 0:
			args := badInputs[s.intn(len(badInputs))]
			s.badCLI(ctx, "bad flags", s.gov(ctx, args...), args)
		case 1:
			p := filepath.Join(s.dir, fmt.Sprintf("bad-%d.yaml", i))
			if os.WriteFile(p, []byte(badConfigs[s.intn(len(badConfigs))]), 0o600) != nil {
				continue
			}
			c := s.gov(ctx, append([]string{"--config", p}, "run", "--resource", resHeavy, "--", "true")...)
			s.badCLI(ctx, "bad config", c, []string{"--config", p})
			_ = os.Remove(p)
		case 2:
			s.badBridge(ctx)
		}
	}
}

// badCLI runs c, which must fail (exit 2 or 125, or 122/73 for a lease
// that does not exist) without a crash.
func (s *soak) badCLI(_ context.Context, what string, c *exec.Cmd, args []string) {
	out, err := combinedOutput(c)
	s.op("bad input: " + what)
	code := 0
	if ee, ok := err.(interface{ ExitCode() int }); ok {
		code = ee.ExitCode()
	}
	switch {
	case bytes.Contains(out, []byte("panic:")) || bytes.Contains(out, []byte("fatal error:")):
		s.violate("bad input", "%q: crashed: %s", args, tail(string(out)))
	case code == 0:
		s.violate("bad input", "%q: accepted (exit 0): %s", args, tail(string(out)))
	case code == -1:
		// killed by the end of the soak
	case len(bytes.TrimSpace(out)) == 0:
		s.violate("bad input", "%q: exit %d without a word", args, code)
	}
	s.check("bad input refused with a message, no crash", 1)
}

// badBridge starts a bridge, feeds it garbage lines then a real
// acquire and bye: it must answer, release and exit 0.
func (s *soak) badBridge(ctx context.Context) {
	c := s.gov(ctx, "bridge")
	var in bytes.Buffer
	for k := 0; k < 3; k++ {
		in.WriteString(badBridgeLines[s.intn(len(badBridgeLines))] + "\n")
	}
	c.Stdin = &in
	out, err := combinedOutput(c)
	s.op("bad input: bridge lines")
	s.check("bad input refused with a message, no crash", 1)
	if bytes.Contains(out, []byte("panic:")) || bytes.Contains(out, []byte("fatal error:")) {
		s.violate("bad input", "bridge fed %q: crashed: %s", in.String(), tail(string(out)))
	}
	_ = err
}
