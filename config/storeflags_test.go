package config_test

import (
	"fmt"
	"testing"

	"github.com/governor-dev/governor/config"
)

// TestStoreFlags: the flags that select the same store, by where each
// value came from; a flag's Redis password is redacted, an environment
// variable's URL is referred to by its name.
func TestStoreFlags(t *testing.T) {
	e := newEnv(t)
	file := e.write("conf.yaml", "project: p\nredis:\n  url: redis://u:filepw@h:1/0\n")
	cases := []struct {
		name string
		opts config.LoadOptions
		want string
	}{
		{"redis URL from a flag: password redacted", config.LoadOptions{File: file, Flags: map[string]string{"redis.url": "redis://u:secret@h:2/0"}},
			"[{config " + file + " } {redis-url redis://u:***@h:2/0 }]"},
		{"redis URL from the environment: by its name", config.LoadOptions{File: file, Env: []string{"GOVERNOR_REDIS_URL=redis://u:secret@h:3/0"}},
			"[{config " + file + " } {redis-url  GOVERNOR_REDIS_URL}]"},
		{"redis URL from the file: --config carries it", config.LoadOptions{File: file},
			"[{config " + file + " }]"},
		{"file backend by flag: --backend and the absolute --dir", config.LoadOptions{File: file, Flags: map[string]string{"backend": "file", "file.dir": "rel/state"}},
			"[{config " + file + " } {backend file } {dir " + e.cwd + "/rel/state }]"},
	}
	for _, tt := range cases {
		l, err := e.load(tt.opts)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got := fmt.Sprint(l.StoreFlags()); got != tt.want {
			t.Errorf("%s: StoreFlags = %s, want %s", tt.name, got, tt.want)
		}
	}
}
