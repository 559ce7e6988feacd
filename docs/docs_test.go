// Package docs holds governor's documentation; its test keeps the pages
// reachable from README's map and their links whole.
package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	linkRE    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	headingRE = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
	fenceRE   = regexp.MustCompile("(?ms)^```.*?^```")
)

// slug is GitHub's anchor for a heading: lower case, punctuation but
// hyphens and underscores dropped, spaces as hyphens.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors are the headings of a page, outside code blocks.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	for _, m := range headingRE.FindAllStringSubmatch(fenceRE.ReplaceAllString(text, ""), -1) {
		out[slug(m[1])] = true
	}
	return out
}

// Every page of docs/ is linked from README's map, and every relative
// link of README and docs/ names a file that exists and, with #anchor, a
// heading of it.
func TestDocsLinks(t *testing.T) {
	pages, err := filepath.Glob("*.md")
	if err != nil || len(pages) == 0 {
		t.Fatalf("no pages in docs/: %v", err)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		if !strings.Contains(string(readme), "](docs/"+p+")") {
			t.Errorf("README does not link docs/%s from its map", p)
		}
	}
	files := append([]string{"../README.md"}, pages...)
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range linkRE.FindAllStringSubmatch(fenceRE.ReplaceAllString(string(text), ""), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			dest := f
			if path != "" {
				dest = filepath.Join(filepath.Dir(f), path)
			}
			body, err := os.ReadFile(dest)
			if err != nil {
				t.Errorf("%s links %s: %v", f, target, err)
				continue
			}
			if anchor != "" && !anchors(string(body))[anchor] {
				t.Errorf("%s links %s: %s has no heading for #%s", f, target, dest, anchor)
			}
		}
	}
}

func TestSlug(t *testing.T) {
	for h, want := range map[string]string{
		"Leases in shell scripts":              "leases-in-shell-scripts",
		"Configuration (`exec-defaults.yaml`)": "configuration-exec-defaultsyaml",
		"Status page and JSON API":             "status-page-and-json-api",
	} {
		if got := slug(h); got != want {
			t.Errorf("slug(%q) = %q, want %q", h, got, want)
		}
	}
}

// TestLayoutWhole: README's layout names every top-level folder and every
// package folder one level below governor/, internal/, bench/, clients/
// and faults/ (itself or a folder inside it), so that a newcomer finds each room from it.
func TestLayoutWhole(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, layout, ok := strings.Cut(string(readme), "## Layout")
	if !ok {
		t.Fatal("README has no Layout section")
	}
	layout, _, _ = strings.Cut(layout, "\n## ")
	listed := map[string]bool{}
	for _, line := range strings.Split(layout, "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			listed[strings.TrimSuffix(f[0], "/")] = true
		}
	}
	dirs := func(parent string) []string {
		es, err := os.ReadDir(filepath.Join("..", parent))
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range es {
			if e.IsDir() && e.Name() != ".git" {
				out = append(out, filepath.ToSlash(filepath.Join(parent, e.Name())))
			}
		}
		return out
	}
	want := dirs(".")
	for _, p := range []string{"governor", "internal", "bench", "clients", "faults", "governor/internal"} {
		want = append(want, dirs(p)...)
	}
	covered := func(d string) bool {
		for l := range listed {
			if l == d || strings.HasPrefix(l, d+"/") {
				return true
			}
		}
		return false
	}
	for _, d := range want {
		if d = strings.TrimPrefix(d, "./"); !covered(d) {
			t.Errorf("README's layout does not list %s/", d)
		}
	}
}
