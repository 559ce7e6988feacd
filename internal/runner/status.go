package runner

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/humantime"
	"github.com/governor-dev/governor/internal/view"

	"github.com/governor-dev/governor/governor/safetext"
)

// statusLine is the one line drawn on a terminal's stderr while a run
// waits: which resource, the place in the queue, who holds it, for how
// long this run has waited. It is rewritten in place (carriage return,
// erase line) and erased when the wait ends.
type statusLine struct {
	w     io.Writer
	width func() int // terminal columns; 0 when unknown
	start time.Time

	mu       sync.Mutex
	resource string
	res      governor.Result
	est      estimate  // what the expected wait rests on
	resAt    time.Time // when res came
	queued   bool
	shown    bool
	stop     chan struct{}
	stopped  chan struct{}
}

func newStatusLine(w io.Writer, width func() int) *statusLine {
	s := &statusLine{w: w, width: width, start: time.Now(), stop: make(chan struct{}), stopped: make(chan struct{})}
	go s.refresh()
	return s
}

// refresh redraws every second so that the waited time moves.
func (s *statusLine) refresh() {
	defer close(s.stopped)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.mu.Lock()
			if s.queued {
				s.drawLocked()
			}
			s.mu.Unlock()
		}
	}
}

// update records that the run waits for resource, as r tells, with the
// expected wait est rests on, and redraws.
func (s *statusLine) update(resource string, r governor.Result, est estimate) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resource, s.res, s.est, s.resAt, s.queued = resource, r, est, time.Now(), true
	s.drawLocked()
}

func (s *statusLine) drawLocked() {
	res := s.res
	if !res.Status.Now.IsZero() {
		res.Status.Now = res.Status.Now.Add(time.Since(s.resAt)) // holders age between updates
	}
	line := renderStatus(s.resource, res, s.est.text(time.Now()), time.Since(s.start))
	if w := s.width(); w > 1 {
		line = truncateRunes(line, w-1) // never wrap: \r returns to the start of the last row only
	}
	fmt.Fprintf(s.w, "\r\x1b[K%s", line)
	s.shown = true
}

// close stops the refreshes and erases the line.
func (s *statusLine) close() {
	close(s.stop)
	<-s.stopped
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shown {
		fmt.Fprint(s.w, "\r\x1b[K")
		s.shown = false
	}
	s.queued = false
}

// estimate is what the status line's expected wait rests on: the
// resource's status read when the queue last moved, and the waiter's
// place. Redrawn later, the estimate counts down (the holders have held
// longer, view.ExpectedWait) until the next move.
type estimate struct {
	st    *governor.Status // nil: unknown
	place int
	at    time.Time // when st was read
}

// text is the expected wait at now, with what it rests on; "" unknown.
func (e estimate) text(now time.Time) string {
	if e.st == nil {
		return ""
	}
	st := *e.st
	st.Now = st.Now.Add(now.Sub(e.at))
	return view.ExpectedWait(st, e.place).String()
}

// expectedWait reads what the expected wait of waiter place of resource
// rests on (unknown when the status cannot be read within a second).
func expectedWait(ctx context.Context, g *governor.Governor, resource string, place int) estimate {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	st, err := g.Status(ctx, resource)
	if err != nil {
		return estimate{}
	}
	return estimate{st: &st, place: place, at: time.Now()}
}

// renderStatus is the text of the status line; est is the expected wait
// ("" when unknown).
func renderStatus(resource string, r governor.Result, est string, waited time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "governor: waiting for %s", resource)
	if r.Position > 0 {
		fmt.Fprintf(&b, ", %s in queue", ordinal(r.Position))
	}
	if est != "" {
		fmt.Fprintf(&b, ", expected wait %s", est)
	}
	st := r.Status
	if st.Limit > 0 {
		fmt.Fprintf(&b, ", %d of %d in use", st.Used, st.Limit)
	}
	if len(st.Holders) > 0 {
		h := st.Holders[0]
		who := safetext.Escape(h.Session)
		if who == "" {
			who = "session unknown"
		}
		fmt.Fprintf(&b, "; held by %s (%s on %s", who, h.Processes(), orUnknown(h.Host))
		if !h.AcquiredAt.IsZero() && !st.Now.IsZero() {
			fmt.Fprintf(&b, ", for %s", humantime.Ago(st.Now.Sub(h.AcquiredAt)))
		}
		b.WriteString(")")
		if n := len(st.Holders) - 1; n > 0 {
			fmt.Fprintf(&b, " and %d more", n)
		}
	}
	fmt.Fprintf(&b, "; waited %s", humantime.Ago(waited))
	return b.String()
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown host"
	}
	return safetext.Escape(s)
}

func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return fmt.Sprintf("%d%s", n, suffix)
}

func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	if n <= 1 {
		return string(r[:n])
	}
	return string(r[:n-1]) + "…"
}
