//go:build linux

package main

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

//go:embed client.py
var clientPy []byte

//go:embed client.mjs
var clientMjs []byte

// clients keeps a Python client, a TypeScript client and a Go Hold
// process running (a fault may kill each, or it may exit after 30 s
// without a grant)
// until ctx ends; each is skipped, said once, when it cannot run here.
func (s *soak) clients(ctx context.Context) {
	done := make(chan struct{}, 3)
	n := 1
	go func() {
		s.clientLoop(ctx, "go hold", "go", func(who string) *exec.Cmd {
			c := exec.Command(s.self, holdArg, s.work, who)
			c.Env = s.env("CFG=" + s.cfg)
			return c
		})
		done <- struct{}{}
	}()
	if py, err := exec.LookPath("python3"); err != nil {
		s.skip("Python client", "no python3 on PATH")
	} else {
		p := filepath.Join(s.dir, "client.py")
		if err := os.WriteFile(p, clientPy, 0o600); err != nil {
			s.violate("start", "python client: %v", err)
		} else {
			n++
			go func() {
				s.clientLoop(ctx, "python client", "py", func(who string) *exec.Cmd {
					c := exec.Command(py, p, s.work, who)
					c.Env = s.env("CFG="+s.cfg, "PYTHONPATH="+filepath.Join(s.o.root, "clients", "python"), "SOAK_BUDGET_LOG="+s.budgetLog())
					return c
				})
				done <- struct{}{}
			}()
		}
	}
	if index, why := s.tsClient(); index == "" {
		s.skip("TypeScript client", why)
	} else {
		p := filepath.Join(s.dir, "client.mjs")
		if err := os.WriteFile(p, clientMjs, 0o600); err != nil {
			s.violate("start", "typescript client: %v", err)
		} else {
			n++
			go func() {
				s.clientLoop(ctx, "typescript client", "ts", func(who string) *exec.Cmd {
					c := exec.Command("node", p, index, s.work, who)
					c.Env = s.env("CFG="+s.cfg, "SOAK_BUDGET_LOG="+s.budgetLog())
					return c
				})
				done <- struct{}{}
			}()
		}
	}
	for ; n > 0; n-- {
		<-done
	}
}

// newClients ends the Python and TypeScript client processes (SIGKILL,
// the soak's kill) right after Redis lost its data, so that the first
// client requests after the loss, on the slots and on the budget gate,
// come from new processes whose bridges never saw the lost state (only
// the machine's witness can hold them back): clientLoop starts them
// again at once.
func (s *soak) newClients() {
	for _, p := range s.scan() {
		if p.kind == "python" || p.kind == "node" {
			s.markKilled(p.PID)
			_ = sendTo(p, syscall.SIGKILL)
		}
	}
	s.fault("new client processes after the loss (the old ones killed)")
}

// tsClient returns the TypeScript client's built index.js, or why not.
func (s *soak) tsClient() (index, why string) {
	if _, err := exec.LookPath("node"); err != nil {
		return "", "no node on PATH"
	}
	index = filepath.Join(s.o.root, "clients", "typescript", "dist", "src", "index.js")
	if _, err := os.Stat(index); err != nil {
		return "", index + " is not built: run 'npm ci && npm run build' in clients/typescript first"
	}
	return index, ""
}

// clientLoop starts client processes one after another until ctx ends,
// then stops the last with SIGTERM (its bridge releases what it holds).
func (s *soak) clientLoop(ctx context.Context, what, prefix string, mk func(who string) *exec.Cmd) {
	for i := 0; ctx.Err() == nil; i++ {
		c := mk(fmt.Sprintf("%s%d", prefix, i))
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		var stderr bytes.Buffer
		c.Stderr = &stderr
		if err := start(c); err != nil {
			s.violate("start", "%s: %v", what, err)
			return
		}
		s.track(c.Process.Pid, what)
		errc := make(chan error, 1)
		go func() { errc <- c.Wait() }()
		var err error
		select {
		case err = <-errc:
		case <-ctx.Done():
			s.markKilled(c.Process.Pid)
			_ = c.Process.Signal(syscall.SIGTERM)
			err = <-errc
		}
		s.untrack(c.Process.Pid)
		s.exitOf(what, c, err, stderr.String())
		if !sleepCtx(ctx, 0) {
			return
		}
	}
}
