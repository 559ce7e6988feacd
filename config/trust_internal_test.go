package config

import (
	"errors"
	"io/fs"
	"strings"
	"syscall"
	"testing"
	"time"
)

type fakeInfo struct {
	mode fs.FileMode
	uid  uint32
}

func (f fakeInfo) Name() string       { return "exec-defaults.yaml" }
func (f fakeInfo) Size() int64        { return 0 }
func (f fakeInfo) Mode() fs.FileMode  { return f.mode }
func (f fakeInfo) ModTime() time.Time { return time.Time{} }
func (f fakeInfo) IsDir() bool        { return f.mode.IsDir() }
func (f fakeInfo) Sys() any           { return &syscall.Stat_t{Uid: f.uid} }

func TestTrusted(t *testing.T) {
	const me, other = 1000, 1001
	tests := []struct {
		name    string
		mode    fs.FileMode
		owner   uint32
		readers Readers
		want    []string // in the error; nil: trusted
	}{
		{"mine 0644", 0o644, me, AnyReader, nil},
		{"mine 0600", 0o600, me, AnyReader, nil},
		{"mine 0444", 0o444, me, AnyReader, nil},
		{"root's 0644", 0o644, 0, AnyReader, nil},
		{"mine group-readable secret", 0o640, me, GroupReaders, nil},
		{"another user's", 0o644, other, AnyReader, []string{"/d/f.yaml", "uid 1001", "not by you", "cp /d/f.yaml", "chown"}},
		{"another user's 0600", 0o600, other, AnyReader, []string{"uid 1001"}},
		{"group-writable", 0o664, me, AnyReader, []string{"/d/f.yaml", "mode 0664", "its group", "chmod go-w /d/f.yaml"}},
		{"world-writable", 0o646, me, AnyReader, []string{"mode 0646", "every user", "chmod go-w /d/f.yaml"}},
		{"root's world-writable", 0o666, 0, AnyReader, []string{"mode 0666", "its group and every user", "chmod go-w"}},
		{"world-readable secret", 0o644, me, GroupReaders, []string{"mode 0644", "readable by every user", "chmod o-rwx /d/f.yaml"}},
		{"mine 0600 credential", 0o600, me, OwnerOnly, nil},
		{"root's 0400 credential", 0o400, 0, OwnerOnly, nil},
		{"group-readable credential", 0o640, me, OwnerOnly, []string{"/d/f.yaml", "mode 0640", "readable by its group", "chmod 600 /d/f.yaml"}},
		{"world-readable credential", 0o604, me, OwnerOnly, []string{"mode 0604", "readable by every user"}},
		{"another user's 0600 credential", 0o600, other, OwnerOnly, []string{"uid 1001"}},
		{"fifo", fs.ModeNamedPipe | 0o600, me, AnyReader, []string{"not a regular file"}},
		{"directory", fs.ModeDir | 0o755, me, AnyReader, []string{"not a regular file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := trusted("/d/f.yaml", fakeInfo{tt.mode, tt.owner}, me, tt.readers)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("trusted; want refused")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if tt.mode.IsRegular() && !errors.Is(err, ErrUntrusted) {
				t.Errorf("error %q is not ErrUntrusted", err)
			}
		})
	}
}
