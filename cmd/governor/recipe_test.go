package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// readmeRecipe returns the shell block that follows the marker
// "<!-- recipe: NAME" in docs/cli.md (README's map links it).
func readmeRecipe(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "<!-- recipe: "+name)
	if !ok {
		t.Fatalf("docs/cli.md has no recipe %q", name)
	}
	_, rest, _ = strings.Cut(rest, "```sh\n")
	block, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatalf("docs/cli.md recipe %q has no shell block", name)
	}
	return block
}

// The README's fenced-push recipe against a local bare repository: two
// pushers at once both land, in turn, with distinct versions; a push whose
// branch moved since it started (a writer outside governor, or one whose
// lease was lost) is refused with its tag, and the branch keeps the other
// writer's commit.
func TestFencedPushRecipe(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: the fenced-push recipe of the README is not run")
	}
	bin := governorBin(t)
	root := t.TempDir()
	script := filepath.Join(root, "push-release.sh")
	if err := os.WriteFile(script, []byte(readmeRecipe(t, "fenced-push")), 0o700); err != nil {
		t.Fatal(err)
	}
	env := append(cleanEnv(),
		"PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HOME="+root, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
		"GOVERNOR_BACKEND=file", "GOVERNOR_DIR="+filepath.Join(root, "state"), "GOVERNOR_PROJECT=recipe",
		"GOVERNOR_CONFIG="+emptyConfig(t))
	sh := func(dir, cmd string, args ...string) (string, error) {
		c := exec.Command("sh", append([]string{"-c", cmd, "sh"}, args...)...)
		c.Dir, c.Env = dir, env
		var out bytes.Buffer
		c.Stdout, c.Stderr = &out, &out
		err := c.Run()
		return out.String(), err
	}
	must := func(dir, cmd string, args ...string) string {
		t.Helper()
		out, err := sh(dir, cmd, args...)
		if err != nil {
			t.Fatalf("%s: %v\n%s", cmd, err, out)
		}
		return strings.TrimSpace(out)
	}
	origin := filepath.Join(root, "origin.git")
	must(root, `git init -q --bare -b main "$1"`, origin)
	seed := filepath.Join(root, "seed")
	must(root, `git clone -q "$1" "$2" 2>/dev/null && cd "$2" && git checkout -q -b main && echo 0 > base && git add base && git commit -qm base && git push -q origin main`, origin, seed)
	clone := func(name string) string {
		dir := filepath.Join(root, name)
		must(root, `git clone -q "$1" "$2" && cd "$2" && echo "$3" > "$3" && git add "$3" && git commit -qm "$3"`, origin, dir, name)
		return dir
	}
	run := `governor --config "$GOVERNOR_CONFIG" run --resource branch:main --limit 1 --if-busy wait -- "$@"`

	// Two pushers at once: both land, one after the other, as v1 and v2.
	a, b := clone("a"), clone("b")
	var wg sync.WaitGroup
	outs, errs := make([]string, 2), make([]error, 2)
	for i, dir := range []string{a, b} {
		wg.Go(func() { outs[i], errs[i] = sh(dir, run, script, "main", "true") })
	}
	wg.Wait()
	for i := range errs {
		if errs[i] != nil {
			t.Fatalf("pusher %d: %v\n%s", i, errs[i], outs[i])
		}
	}
	log := must(seed, `git fetch -q --tags origin && git log --format=%s origin/main`)
	if log != "b\na\nbase" && log != "a\nb\nbase" {
		t.Fatalf("origin/main log:\n%s", log)
	}
	if v1, v2 := must(seed, `git rev-parse v1^{commit}`), must(seed, `git rev-parse v2^{commit}`); v1 == v2 {
		t.Fatalf("v1 and v2 name the same commit %s", v1)
	}

	// The branch moves while the pusher holds it (its check pushes from
	// another clone, as a writer whose turn it was not would): refused.
	c, d := clone("c"), clone("d")
	intruder := `cd "$1" && git pull -q --rebase origin main && git push -q origin HEAD:main`
	out, err := sh(c, run, script, "main", "sh", "-c", intruder, "sh", d)
	if err == nil {
		t.Fatalf("the push over a moved branch was accepted:\n%s", out)
	}
	t.Logf("refused as expected: %v\n%s", err, out)
	if got, want := must(seed, `git fetch -q --tags origin && git log -1 --format=%s origin/main`), "d"; got != want {
		t.Fatalf("origin/main is at %q, want the other writer's %q", got, want)
	}
	if tags := must(seed, `git tag -l`); strings.Contains(tags, "v3") {
		t.Fatalf("the refused push's tag landed: %s", tags)
	}
}
