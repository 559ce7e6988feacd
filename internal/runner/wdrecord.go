package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
	"github.com/governor-dev/governor/governor/safetext"
	"github.com/governor-dev/governor/internal/connect"
)

// msgRecord starts the line of the watchdog protocol that tells the
// watchdog where to record what it does, "record JSON" (watchdogRecord),
// sent once the leases are granted, before the first plan. The pipe is
// governor's and its watchdog's alone (close-on-exec), so the Redis URL
// goes in it whole, never on a command line.
const msgRecord = "record"

// recordBudget bounds the watchdog's recording of one action: the action
// (TERM, KILL) is done before, and a backend that cannot be reached in
// time only costs the event, said on stderr.
const recordBudget = 5 * time.Second

// watchdogRecord is where the watchdog records its actions: the run's
// store and the leases whose tree it guards.
type watchdogRecord struct {
	Store  connect.Store   `json:"store"`
	Leases []recordedLease `json:"leases"`
}

type recordedLease struct {
	Project  string `json:"project"`
	Resource string `json:"resource"`
	ID       string `json:"id"`
	Token    int64  `json:"token"`
}

// recordMessage is the record line for the leases of r (none: no line).
func (r *run) recordMessage() string {
	if len(r.leases) == 0 {
		return ""
	}
	rec := watchdogRecord{Store: connect.StoreOf(&r.o.Config.Config)}
	for _, l := range r.leases {
		k := l.Key()
		rec.Leases = append(rec.Leases, recordedLease{Project: k.Project, Resource: k.Resource, ID: l.ID(), Token: l.Token()})
	}
	b, err := json.Marshal(rec)
	if err != nil { // cannot happen: plain data
		return ""
	}
	return msgRecord + " " + string(b) + "\n"
}

// parseRecord reads a record line.
func parseRecord(line string) (*watchdogRecord, error) {
	rec := &watchdogRecord{}
	if err := json.Unmarshal([]byte(line[len(msgRecord)+1:]), rec); err != nil {
		return nil, fmt.Errorf("unreadable %s line on the watchdog pipe: %v", msgRecord, err)
	}
	return rec, nil
}

// note records detail as an eventkind.WatchdogKill on every lease the
// watchdog guards, once the action it tells of is done. It records in
// the background, so that the watchdog's next action (KILL after TERM)
// never waits for a backend: the backend is opened only now (the normal
// run never pays for it), within recordBudget, and a failure is said on
// stderr. The watchdog waits for what is pending before it exits
// (settle).
func (g *guard) note(detail string) {
	if g.rec == nil || len(g.rec.Leases) == 0 {
		return
	}
	rec, detail := g.rec, "run "+g.id+": "+detail
	g.pending.Add(1)
	go func() {
		defer g.pending.Done()
		if err := rec.note(detail); err != nil {
			fmt.Fprintf(g.stderr, "governor: watchdog of run %s: could not record the %s event: %s\n",
				g.id, eventkind.WatchdogKill, safetext.Escape(err.Error()))
		}
	}()
}

// settle waits for the records note started (each bounded by
// recordBudget).
func (g *guard) settle() { g.pending.Wait() }

// note records detail on every lease of rec, within recordBudget.
func (rec *watchdogRecord) note(detail string) error {
	ctx, cancel := context.WithTimeout(context.Background(), recordBudget)
	defer cancel()
	b, err := rec.Store.Open(ctx, nil)
	if err != nil {
		return err
	}
	defer b.Close()
	for _, l := range rec.Leases {
		if err := b.Record(ctx, governor.Key{Project: l.Project, Resource: l.Resource}, governor.Event{Kind: eventkind.WatchdogKill, LeaseID: l.ID, Token: l.Token, Detail: detail}); err != nil {
			return err
		}
	}
	return nil
}
