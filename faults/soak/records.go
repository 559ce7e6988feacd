//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// grant is one lease granted, as its holder saw it: wall times in ns of
// the start of its acquire (before any wait: the backend may have handed
// it the slot, with its token, long before the holder learnt it) and of
// its end (0: no end seen).
type grant struct {
	res   string
	token int64
	asked int64
	end   int64
	who   string
}

// checkFencing checks that a grant asked for after another had ended (on
// the same resource) carries a larger token, and that no token repeats.
func (s *soak) checkFencing(gs []grant) {
	byRes := map[string][]grant{}
	for _, g := range gs {
		byRes[g.res] = append(byRes[g.res], g)
	}
	for res, list := range byRes {
		seen := map[int64]grant{}
		for _, g := range list {
			if o, dup := seen[g.token]; dup {
				s.violate("fencing", "%s: token %d granted twice (%s and %s)", res, g.token, o.who, g.who)
			}
			seen[g.token] = g
		}
		ended := make([]grant, 0, len(list))
		for _, g := range list {
			if g.end != 0 {
				ended = append(ended, g)
			}
		}
		sort.Slice(ended, func(i, j int) bool { return ended[i].end < ended[j].end })
		sort.Slice(list, func(i, j int) bool { return list[i].asked < list[j].asked })
		// maxEnded is the largest token of the grants ended so far.
		var maxEnded grant
		j := 0
		for _, g := range list {
			for j < len(ended) && ended[j].end < g.asked {
				if ended[j].token > maxEnded.token {
					maxEnded = ended[j]
				}
				j++
			}
			if maxEnded.token != 0 && g.token <= maxEnded.token {
				s.violate("fencing", "%s: token %d granted to %s, asked for at %s, after token %d (%s) had ended at %s",
					res, g.token, g.who, wall(g.asked), maxEnded.token, maxEnded.who, wall(maxEnded.end))
			}
		}
		s.check("fencing tokens increase per resource (grants)", len(list))
	}
}

func wall(ns int64) string { return time.Unix(0, ns).UTC().Format("15:04:05.000") }

// runRecord is one line of `governor run --record`.
type runRecord struct {
	Kind      string `json:"kind"`
	ID        string `json:"id"`
	PID       int    `json:"pid"`
	Outcome   string `json:"outcome"`
	Start     string `json:"start"`
	End       string `json:"end"`
	Resources []struct {
		Name  string `json:"name"`
		Token int64  `json:"token"`
	} `json:"resources"`
}

// checkRecords checks the runs' record files: every grant line has at
// most one end line, and none only when the soak killed that governor;
// and the grants' tokens (checkFencing). It returns the grants checked.
func (s *soak) checkRecords() int {
	files, _ := filepath.Glob(filepath.Join(s.recs, "run-*.jsonl"))
	var gs []grant
	for _, p := range files {
		b, _ := os.ReadFile(p)
		grants := map[string]*runRecord{}
		ends := map[string]int{}
		var endOf = map[string]*runRecord{}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var r runRecord
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				s.violate("records", "%s: unreadable line %q: %v", filepath.Base(p), sc.Text(), err)
				continue
			}
			switch r.Kind {
			case "grant":
				if _, dup := grants[r.ID]; dup {
					s.violate("records", "%s: run %s has two grant lines", filepath.Base(p), r.ID)
				}
				grants[r.ID] = &r
			case "end", "":
				ends[r.ID]++
				endOf[r.ID] = &r
			}
		}
		for id, g := range grants {
			switch n := ends[id]; {
			case n > 1:
				s.violate("records", "%s: run %s has %d end lines", filepath.Base(p), id, n)
			case n == 0 && !s.wasKilled(g.PID):
				s.violate("records", "%s: run %s (governor pid %d, not killed by the soak) has a grant and no end", filepath.Base(p), id, g.PID)
			}
			for _, res := range g.Resources {
				gr := grant{res: res.Name, token: res.Token, asked: parseWall(g.Start), who: "run " + id}
				if e := endOf[id]; e != nil {
					gr.end = parseWall(e.End)
				}
				gs = append(gs, gr)
			}
		}
		for id, n := range ends {
			if grants[id] == nil && n > 1 {
				s.violate("records", "%s: run %s (never granted) has %d end lines", filepath.Base(p), id, n)
			}
		}
		s.check("every grant has exactly one end record (runs)", len(grants))
	}
	s.checkFencing(gs)
	return len(gs)
}

func parseWall(v string) int64 {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return 0
	}
	return t.UnixNano()
}
