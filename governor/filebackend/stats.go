package filebackend

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/histogram"
)

// stats is a resource's statistics file (statsName): what no guarantee
// needs after a crash, kept out of the state file so that recording it
// costs no sync. It is replaced by rename under the resource lock,
// without a sync: a power loss may leave it empty or torn, which loses
// the statistics and nothing else (see Observe).
type stats struct {
	Version    int                         `json:"version"`
	Histograms map[string]*storedHistogram `json:"histograms,omitempty"`
}

const statsVersion = 1

// Observe implements governor.Backend: the counts go into the
// resource's stats file, written without a sync (a grant or release is
// never waiting for it to reach the disk). A resource without a state
// file (forgotten since the observations were made) takes none. A stats
// file that does not parse (torn by a power loss) is replaced by one
// holding only these counts.
func (b *Backend) Observe(ctx context.Context, key governor.Key, name string, counts []int64, sum time.Duration) error {
	return b.do(ctx, key, section{}, func(t *tx) error {
		if !t.hasState() {
			return nil
		}
		s := readStats(t.dir)
		s.add(name, counts, sum)
		data, err := json.Marshal(s)
		if err == nil {
			err = replaceFile(t.dir, statsName, statsTemp, append(data, '\n'), false)
		}
		if err != nil {
			return fmt.Errorf("governor: file backend: write %s: %w", t.b.resourceFile(t.key, statsName), err)
		}
		return t.commit()
	})
}

// readStats reads the stats file of the resource directory dir: empty
// when there is none or it does not parse (statistics are not kept
// through a power loss, see stats).
func readStats(dir int) *stats {
	s := &stats{}
	data, err := readFile(dir, statsName)
	if err != nil || json.Unmarshal(data, s) != nil || s.Version != statsVersion {
		s = &stats{}
	}
	s.Version = statsVersion
	return s
}

// add adds counts and sum to histogram name.
func (s *stats) add(name string, counts []int64, sum time.Duration) {
	if s.Histograms == nil {
		s.Histograms = map[string]*storedHistogram{}
	}
	h := s.Histograms[name]
	if h == nil {
		h = &storedHistogram{}
		s.Histograms[name] = h
	}
	h.add(counts, int64(sum))
}

// add adds counts and sum (ns) to h.
func (h *storedHistogram) add(counts []int64, sum int64) {
	for len(h.Counts) < len(counts) {
		h.Counts = append(h.Counts, 0)
	}
	for i, n := range counts {
		h.Counts[i] += n
	}
	h.Sum += sum
}

// histograms reads key's histograms for Status, without locking (the
// stats file is replaced by rename, so it is always whole or absent):
// those of its stats file, plus those a state file written before the
// stats file existed still holds.
func (b *Backend) histograms(key governor.Key, st *state) map[string]histogram.Histogram {
	all := &stats{}
	for name, h := range st.Histograms {
		all.add(name, h.Counts, time.Duration(h.Sum))
	}
	if dir, err := b.openResource(key.Project, key.Resource, false); err == nil {
		for name, h := range readStats(dir).Histograms {
			all.add(name, h.Counts, time.Duration(h.Sum))
		}
		unix.Close(dir)
	}
	if len(all.Histograms) == 0 {
		return nil
	}
	out := make(map[string]histogram.Histogram, len(all.Histograms))
	for name, h := range all.Histograms {
		out[name] = histogram.Histogram{Counts: slices.Clone(h.Counts), Sum: time.Duration(h.Sum)}
	}
	return out
}
