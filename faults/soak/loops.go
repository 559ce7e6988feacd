//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// runLoop runs `governor run --resource RES -- soak work` over and
// over, each run recording its work in its loop's span file and its
// grant and end in its loop's record file.
func (s *soak) runLoop(ctx context.Context, res string, i int) {
	tag := fmt.Sprint(i)
	if res != resHeavy {
		tag = fmt.Sprint("p", i) // the leased provider's central loop
	}
	rec := filepath.Join(s.recs, fmt.Sprintf("run-%s.jsonl", tag))
	for n := 0; ctx.Err() == nil; n++ {
		who := fmt.Sprintf("run%s.%d", tag, n)
		out := filepath.Join(s.work, fmt.Sprintf("%s-run%s.spans", res, tag))
		// Some longer than the TTL: a governor stopped while its command
		// works on must have it stopped by its watchdog.
		d := time.Duration(200+s.intn(1300)) * time.Millisecond
		if s.intn(4) == 0 {
			d = time.Duration(3000+s.intn(3000)) * time.Millisecond
		}
		// Not CommandContext: the end of the soak lets the last run end.
		c := s.gov(context.Background(), "run", "--resource", res, "--record", rec,
			"--wait-timeout", "30s", "--kill-grace", "500ms", "--", s.self, workArg, out, d.String(), who)
		var stderr bytes.Buffer
		c.Stderr = &stderr
		if err := start(c); err != nil {
			s.violate("start", "governor run: %v", err)
			return
		}
		s.track(c.Process.Pid, "governor run")
		err := c.Wait()
		s.untrack(c.Process.Pid)
		s.exitOf("run", c, err, stderr.String())
		if !sleepCtx(ctx, time.Duration(s.intn(300))*time.Millisecond) {
			return
		}
	}
}

// exitOf counts a CLI's exit by code, and records a violation for a
// crash (a Go panic, a fatal error, a signal the soak did not send).
func (s *soak) exitOf(what string, c *exec.Cmd, err error, stderr string) {
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			if s.wasKilled(c.Process.Pid) {
				s.op(what + " killed by the soak")
				return
			}
			s.violate("crash", "%s pid %d died of %v (not sent by the soak): %s", what, c.Process.Pid, ws.Signal(), tail(stderr))
			return
		}
	} else if err != nil {
		if c.Process == nil && c.Err == nil && errors.Is(err, context.DeadlineExceeded) {
			// Its context (the load's) ended before it started: at the
			// end of the load, not a failure to start.
			s.op(what + " not started: the load ended")
			return
		}
		s.violate("start", "%s: %v", what, err)
		return
	}
	s.op(fmt.Sprintf("%s exit %d", what, code))
	if code != 0 {
		s.sample(fmt.Sprintf("%s exit %d", what, code), stderr)
	}
	if strings.Contains(stderr, "panic:") || strings.Contains(stderr, "fatal error:") || strings.Contains(stderr, "DATA RACE") ||
		strings.Contains(stderr, "Traceback (most recent call last)") || strings.Contains(stderr, "Unhandled") {
		s.violate("crash", "%s pid %d exit %d: %s%s", what, c.Process.Pid, code, panicLine(stderr), tail(stderr))
	}
}

// panicLine is stderr's first line saying "panic:" and the next (the
// top frame), then " | … ", or "" when none: a Go panic's message comes
// before a stack tail keeps.
func panicLine(stderr string) string {
	lines := strings.Split(stderr, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "panic:") || strings.HasPrefix(l, "fatal error:") {
			return strings.Join(lines[i:min(i+6, len(lines))], " | ") + " | … "
		}
	}
	return ""
}

func tail(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 600 {
		s = "…" + s[len(s)-600:]
	}
	return strings.ReplaceAll(s, "\n", " | ")
}

// shellScript is a bash loop of acquire, work, renew, work, release on
// resource shell. Each grant is logged as "grant TOKEN WALLNS" (when
// its acquire started) and its end as "end TOKEN WALLNS CODE" to LOG.
const shellScript = `
set -u
while :; do
  asked=$(date +%s%N)
  out=$("$GOVERNOR_BIN" --config "$CFG" $STORE acquire shell --ttl 3s --pid $$ --wait-timeout 20s) || { sleep 0.2; continue; }
  read -r lease token <<<"$out"
  echo "grant $token $asked" >>"$LOG"
  "$SOAK" work "$OUT" "0.$((RANDOM % 8 + 1))s" "$WHO"
  code=0
  "$GOVERNOR_BIN" --config "$CFG" $STORE renew --token "$token" "$lease" || code=$?
  if [ $code = 0 ]; then
    "$SOAK" work "$OUT" "0.$((RANDOM % 8 + 1))s" "$WHO"
    "$GOVERNOR_BIN" --config "$CFG" $STORE release "$lease" || code=$?
  fi
  echo "end $token $(date +%s%N) $code" >>"$LOG"
  [ -e "$STOP" ] && exit 0
  sleep 0.$((RANDOM % 3))
done
`

// shellLoop runs the shell script (restarted when a fault kills it)
// until ctx ends.
func (s *soak) shellLoop(ctx context.Context, i int) {
	stop := filepath.Join(s.dir, fmt.Sprintf("stop-shell%d", i))
	for n := 0; ctx.Err() == nil; n++ {
		// The soak's directory as an argument ($1, unused): the soak
		// finds its processes by it in their command lines.
		c := exec.Command("bash", "-c", shellScript, "soak-shell", s.dir)
		c.Env = s.env("CFG="+s.cfg, "STORE="+strings.Join(s.st.flags(), " "), "SOAK="+s.self,
			"LOG="+filepath.Join(s.logs, fmt.Sprintf("shell%d.log", i)), "STOP="+stop,
			"OUT="+filepath.Join(s.work, fmt.Sprintf("%s-shell%d.spans", resShell, i)), fmt.Sprintf("WHO=shell%d.%d", i, n))
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		var stderr bytes.Buffer
		c.Stderr = &stderr
		if err := start(c); err != nil {
			s.violate("start", "shell loop: %v", err)
			return
		}
		s.track(c.Process.Pid, "shell loop")
		done := make(chan error, 1)
		go func() { done <- c.Wait() }()
		var err error
		select {
		case err = <-done:
		case <-ctx.Done():
			_ = os.WriteFile(stop, nil, 0o600)
			err = <-done
		}
		s.untrack(c.Process.Pid)
		s.exitOf("shell loop", c, err, stderr.String())
		if strings.Contains(stderr.String(), "panic:") {
			return
		}
	}
}

// checkShellLogs checks the shell loops' grants: every token unique and
// increasing over grants that follow an ended one; it returns how many
// grants it checked.
func (s *soak) checkShellLogs() int {
	files, _ := filepath.Glob(filepath.Join(s.logs, "shell*.log"))
	var gs []grant
	for _, p := range files {
		b, _ := os.ReadFile(p)
		open := map[int64]int{}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) < 3 {
				continue
			}
			tok, err1 := strconv.ParseInt(f[1], 10, 64)
			at, err2 := strconv.ParseInt(f[2], 10, 64)
			if err1 != nil || err2 != nil {
				continue
			}
			switch f[0] {
			case "grant":
				gs = append(gs, grant{res: resShell, token: tok, asked: at, who: filepath.Base(p)})
				open[tok] = len(gs) - 1
			case "end":
				if i, ok := open[tok]; ok {
					gs[i].end = at
					delete(open, tok)
				}
			}
		}
	}
	s.checkFencing(gs)
	return len(gs)
}
