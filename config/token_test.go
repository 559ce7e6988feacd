package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/governor-dev/governor/config"
)

// The admin token file of 'governor serve' is read only when nobody but
// its owner can read it, and only when it holds one token long enough
// not to be guessed; each refusal names the file and the fix.
func TestReadTokenFile(t *testing.T) {
	const good = "s3cr3t-t0ken-0123456789"
	for _, tc := range []struct {
		name    string
		content string
		mode    os.FileMode
		want    string   // the token; "" when refused
		errs    []string // in the refusal
	}{
		{"owner only", good + "\n", 0o600, good, nil},
		{"read-only for its owner", "  " + good + "  \n", 0o400, good, nil},
		{"group-readable", good, 0o640, "", []string{"mode 0640", "readable by its group", "chmod 600"}},
		{"world-readable", good, 0o604, "", []string{"mode 0604", "readable by every user"}},
		{"empty", "\n", 0o600, "", []string{"is empty", "/dev/urandom"}},
		{"two lines", good + "\n" + good + "\n", 0o600, "", []string{"several lines"}},
		{"short", "0123456789", 0o600, "", []string{"has 10 characters", "at least 16"}},
		{"space inside", "0123456789 0123456789", 0o600, "", []string{`' '`, "printable ASCII"}},
		{"not ASCII", "0123456789é0123456789", 0o600, "", []string{`'é'`, "printable ASCII"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "admin-token")
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, tc.mode); err != nil {
				t.Fatal(err)
			}
			tok, err := config.ReadTokenFile(path)
			if tc.want != "" {
				if err != nil || tok != tc.want {
					t.Fatalf("got %q, %v; want %q", tok, err, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("read %q; want refused", tok)
			}
			for _, w := range append(tc.errs, path) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	_, err := config.ReadTokenFile(filepath.Join(t.TempDir(), "missing"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v; want fs.ErrNotExist", err)
	}
}
