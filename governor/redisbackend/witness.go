package redisbackend

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/governor-dev/governor/governor/internal/backendkit"
	"github.com/governor-dev/governor/governor/statedir"
)

// Witness makes the backend keep, in a file under dir shared by the
// processes of this machine (and user) that talk to server, what they
// have seen of the server's state: per resource the incarnation of its
// state (acquire.lua's inc), per budget the birth of its state. Each new
// acquire sends the incarnation witnessed, each budget reservation and
// settle the birth: a state that is gone, or born since, is evidence of
// lost data (a restart without persistence, a flush, a failover to an
// empty replica, an eviction) seen by a process that never saw the state
// itself (a new `governor run`, a new client's bridge), on which the
// resource is quarantined and the budget held, as when a renewal finds
// the loss. server names the server (a URL without its password): one
// file per server. A file that cannot be read or written is a Warn line,
// and the backend goes on with what the process itself saw.
func Witness(dir, server string) Option {
	return func(b *Backend) {
		sum := sha256.Sum256([]byte(server))
		b.wit = &witness{path: filepath.Join(dir, "redis-witness-"+hex.EncodeToString(sum[:8])+".json"), server: server,
			data: witnessFile{R: map[string]witnessEntry{}, B: map[string]witnessEntry{}}}
	}
}

// witnessRefresh is how old a witness entry may grow before a process
// that sees the same value again writes it anew (its time), so that an
// entry in use is never dropped (backendkit.WitnessKeep).
const witnessRefresh = 24 * time.Hour

// witness is the machine's witness file, as this process last read it
// and what it saw since.
type witness struct {
	path, server string
	warn         func(string)
	mu           sync.Mutex
	data         witnessFile
	stamp        string // the file's size and mtime at the last read
	warned       bool
}

// witnessFile is the file's JSON: R by resource (project, a unit
// separator, resource), B by budget (project, separator, name).
type witnessFile struct {
	Server string                  `json:"server"`
	R      map[string]witnessEntry `json:"r"`
	B      map[string]witnessEntry `json:"b"`
}

// witnessEntry is one value seen (µs incarnation or ms birth) and when
// this machine last wrote it (Unix ms).
type witnessEntry struct {
	V int64 `json:"v"`
	T int64 `json:"t"`
}

func witnessKey(project, name string) string { return project + "\x1f" + name }

// table is the map of kind 'r' or 'b'.
func (f *witnessFile) table(kind byte) map[string]witnessEntry {
	if kind == 'r' {
		return f.R
	}
	return f.B
}

// seen returns what the machine witnessed of k (0: nothing), reading the
// file again when k is not known here and the file changed.
func (w *witness) seen(kind byte, k string) int64 {
	if w == nil {
		return 0
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if e, ok := w.data.table(kind)[k]; ok {
		return e.V
	}
	w.reload()
	return w.data.table(kind)[k].V
}

// projectBudgets returns the budgets of project the machine witnessed,
// with their births.
func (w *witness) projectBudgets(project string) map[string]int64 {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.reload()
	out := map[string]int64{}
	for k, e := range w.data.B {
		if p, name, ok := strings.Cut(k, "\x1f"); ok && p == project {
			out[name] = e.V
		}
	}
	return out
}

// saw records that a process saw v (0: nothing to record) for k: written
// to the file when it is new to this machine, or the entry is due a
// refresh.
func (w *witness) saw(kind byte, k string, v int64) {
	if w == nil || v <= 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now().UnixMilli()
	if e, ok := w.data.table(kind)[k]; ok && e.V >= v && now-e.T < witnessRefresh.Milliseconds() {
		return
	}
	if err := w.write(kind, k, v, now); err != nil {
		w.data.table(kind)[k] = witnessEntry{V: v, T: now} // known here at least
		if !w.warned && w.warn != nil {
			w.warned = true
			w.warn(fmt.Sprintf("governor: the witness of Redis's state %s: %v (a loss of Redis's data is then detected only by what this process saw)", w.path, err))
		}
	}
}

// reload reads the file if it changed since the last read, merging it
// into what this process knows (the greater value wins). w.mu is held.
func (w *witness) reload() {
	stamp := fileStamp(w.path)
	if stamp == "" || stamp == w.stamp {
		return
	}
	f, err := readWitness(w.path)
	if err != nil {
		return
	}
	w.stamp = stamp
	merge(&w.data, f)
}

// merge adds src's entries to dst, the greater value (and later time)
// winning.
func merge(dst *witnessFile, src witnessFile) {
	for _, kind := range []byte{'r', 'b'} {
		d := dst.table(kind)
		for k, e := range src.table(kind) {
			if o, ok := d[k]; !ok || e.V > o.V || e.V == o.V && e.T > o.T {
				d[k] = e
			}
		}
	}
}

func readWitness(path string) (witnessFile, error) {
	f := witnessFile{R: map[string]witnessEntry{}, B: map[string]witnessEntry{}}
	data, err := os.ReadFile(path)
	if err != nil {
		return f, err
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return witnessFile{R: map[string]witnessEntry{}, B: map[string]witnessEntry{}}, fmt.Errorf("%s does not read: %w", path, err)
	}
	if f.R == nil {
		f.R = map[string]witnessEntry{}
	}
	if f.B == nil {
		f.B = map[string]witnessEntry{}
	}
	return f, nil
}

// write merges the file, this process's view and k's new value, drops
// the entries unwritten for backendkit.WitnessKeep, and replaces the file
// (a temporary file renamed over it), under an exclusive lock on
// path.lock that every writer takes. w.mu is held.
func (w *witness) write(kind byte, k string, v, now int64) error {
	if err := os.MkdirAll(filepath.Dir(w.path), 0o700); err != nil {
		return err
	}
	lf, err := os.OpenFile(w.path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer lf.Close()
	if err := unix.Flock(int(lf.Fd()), unix.LOCK_EX); err != nil {
		return err
	}
	f, err := readWitness(w.path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		f = witnessFile{R: map[string]witnessEntry{}, B: map[string]witnessEntry{}} // a damaged file is replaced
	}
	merge(&w.data, f)
	t := w.data.table(kind)
	if e := t[k]; v >= e.V {
		t[k] = witnessEntry{V: v, T: now}
	}
	keep := now - backendkit.WitnessKeep.Milliseconds()
	for _, kind := range []byte{'r', 'b'} {
		for key, e := range w.data.table(kind) {
			if e.T < keep {
				delete(w.data.table(kind), key)
			}
		}
	}
	w.data.Server = w.server
	data, err := json.Marshal(w.data)
	if err != nil {
		return err
	}
	if err := statedir.WriteFile(w.path, data); err != nil {
		return err
	}
	w.stamp = fileStamp(w.path)
	return nil
}

// fileStamp is path's size and modification time, "" when it cannot be
// read.
func fileStamp(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return ""
	}
	return fmt.Sprint(fi.Size(), fi.ModTime().UnixNano())
}
