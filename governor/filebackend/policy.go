package filebackend

import (
	"fmt"
	"slices"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
	"github.com/governor-dev/governor/governor/internal/backendkit"
	"github.com/governor-dev/governor/governor/internal/policyrule"
)

// Queue policies (issue 15): the rules are governor.Policy's; this is the
// file backend's twin of lib-policy.lua's "Queue policies". Under a policy the
// waiters stay sorted by class, then by start-time-fair-queueing tag
// (ties: by arrival); holders and waiters carry their class (index) and
// fair key; the weight each class and key holds is summed from the
// holders when needed.

// policy returns the policy in force, parsed.
func (t *tx) policy() (governor.Policy, bool) {
	if t.st.Policy == "" {
		return governor.Policy{}, false
	}
	p, err := governor.ParsePolicy(t.st.Policy)
	if err != nil {
		return governor.Policy{}, false
	}
	return p, true
}

// agreePolicy sets the policy in force to the one asked for when the
// resource is idle, and otherwise records a differing one as drift.
func (t *tx) agreePolicy(req governor.Request, idle bool) {
	st := t.st
	if st.Policy == req.Policy {
		if idle && st.PolicyDrift != "" {
			st.PolicyDrift = ""
			t.dirty = true
		}
		return
	}
	if idle {
		st.Policy, st.PolicyDrift, st.Overtakes, st.VTime, st.KeyTags = req.Policy, "", nil, nil, nil
		t.dirty = true
		return
	}
	if st.PolicyDrift != req.Policy {
		t.event(eventkind.Drift, req.ID, 0, fmt.Sprintf("a process asked for queue policy %q; the policy in force is %q", req.Policy, st.Policy))
		st.PolicyDrift = req.Policy
		t.dirty = true
	}
}

func classCount(p governor.Policy) int { return max(1, len(p.Classes)) }

// policyUse is what st's holders hold, by class and by fair key.
func (st *state) policyUse(p governor.Policy) policyrule.Use {
	n := classCount(p)
	u := policyrule.Use{Limit: st.Limit, Used: st.used(), Classes: make([]int, n), Keys: map[string]int{}}
	for _, h := range st.Holders {
		if h.Class >= 0 && h.Class < n {
			u.Classes[h.Class] += h.Weight
		}
		if h.Key != "" {
			u.Keys[h.Key] += h.Weight
		}
	}
	return u
}

// admit is the rules' Admit (policyrule) on the state as it is.
func (t *tx) admit(p governor.Policy, c int, key string, w int) policyrule.Verdict {
	return p.Rules().Admit(t.st.policyUse(p), c, key, w)
}

// eager (policy eager): waiter head of class c does not fit; returns the
// index of a later waiter of its class, at most backendkit.PolicySkip
// deep, that may be granted now instead, unless head was passed
// backendkit.EagerPasses times already; or -1.
func (t *tx) eager(p governor.Policy, c, head int) int {
	st := t.st
	id := st.Waiters[head].ID
	n := 0
	if st.EagerHead == id {
		n = st.EagerPasses
	}
	if n >= backendkit.EagerPasses {
		return -1
	}
	seen := 0
	for j := head + 1; j < len(st.Waiters) && seen < backendkit.PolicySkip; j++ {
		w := st.Waiters[j]
		if w.Class != c {
			continue
		}
		seen++
		if t.admit(p, c, w.Key, w.Weight) == policyrule.Allows {
			st.EagerHead, st.EagerPasses = id, n+1
			t.dirty = true
			return j
		}
	}
	return -1
}

// enqueuePolicy queues w in class c under key, after every waiter of a
// higher class, or of its class with a tag not above its own.
func (t *tx) enqueuePolicy(p governor.Policy, w waiter) int {
	st := t.st
	n := classCount(p)
	if len(st.Waiters) == 0 {
		st.VTime, st.KeyTags = nil, nil // no waiter: the tags start again
	}
	if len(st.VTime) < n {
		st.VTime = append(st.VTime, make([]int64, n-len(st.VTime))...)
	}
	if st.KeyTags == nil {
		st.KeyTags = map[string]int64{}
	}
	tk := "" // without fairness, one FIFO per class
	if p.Rules().IsFair() {
		tk = w.Key
	}
	kt := fmt.Sprintf("%d:%s", w.Class, tk)
	w.Tag = max(st.VTime[w.Class], st.KeyTags[kt]) + int64(backendkit.PolicyQuant/p.Rules().FairWeight(tk))
	st.KeyTags[kt] = w.Tag
	i := len(st.Waiters)
	for i > 0 && (st.Waiters[i-1].Class > w.Class || st.Waiters[i-1].Class == w.Class && st.Waiters[i-1].Tag > w.Tag) {
		i--
	}
	st.Waiters = slices.Insert(st.Waiters, i, w)
	t.dirty = true
	return i
}

// nextPolicy returns the index of the waiter to grant next, or -1: the
// starving class first (the highest whose overtakes reached the bound),
// then every class from the highest; in a class the first waiter the
// fair cap lets through, looking backendkit.PolicySkip deep; a head the
// limit or a reserve stops stops every class below.
func (t *tx) nextPolicy(p governor.Policy) int {
	st := t.st
	n := classCount(p)
	first := -1
	for c := 1; c < n && c < len(st.Overtakes); c++ {
		if st.Overtakes[c] >= p.Rules().Overtakes() && t.classHead(p, c, false) >= 0 {
			first = c
			break
		}
	}
	order := make([]int, 0, n+1)
	if first >= 0 {
		order = append(order, first)
	}
	for c := 0; c < n; c++ {
		if c != first {
			order = append(order, c)
		}
	}
	for _, c := range order {
		i := t.classHead(p, c, true)
		if i < 0 {
			continue
		}
		w := st.Waiters[i]
		v := t.admit(p, c, w.Key, w.Weight)
		if v == policyrule.Allows {
			return i
		}
		if v == policyrule.Full && p.Eager {
			if j := t.eager(p, c, i); j >= 0 {
				return j
			}
		}
		// The starving class's head stops the others only when the free
		// slots stop it (a reserve is not its to wait for).
		if v == policyrule.Full || v.BlocksBelow() && c != first {
			return -1
		}
	}
	return -1
}

// classHead is the index of class c's first waiter (with capped, the
// first the fair cap lets through, at most backendkit.PolicySkip deep), or
// -1.
func (t *tx) classHead(p governor.Policy, c int, capped bool) int {
	st := t.st
	ku := st.policyUse(p).Keys
	seen := 0
	for i, w := range st.Waiters {
		if w.Class != c {
			continue
		}
		if !capped {
			return i
		}
		if p.FairCap == 0 || w.Key == "" || ku[w.Key]+w.Weight <= p.FairCap {
			return i
		}
		if seen++; seen == backendkit.PolicySkip {
			break
		}
	}
	return -1
}

// promotePolicy is promote under a policy.
func (t *tx) promotePolicy(p governor.Policy) {
	st := t.st
	for len(st.Waiters) > 0 && st.used() < st.Limit && !t.heldBack() {
		i := t.nextPolicy(p)
		if i < 0 {
			return
		}
		w := st.Waiters[i]
		pipe := waitPrefix + escape(w.ID)
		st.Waiters = slices.Delete(st.Waiters, i, i+1)
		t.dirty = true
		// The waiter cannot act on a wake-up before this section ends.
		if pokePipe(t.dir, pipe, true) == pipeOrphaned {
			t.unlink = append(t.unlink, pipe)
			continue
		}
		t.grantPolicy(p, w.ID, w.Weight, time.Duration(w.TTL), w.Decl, w.Class, w.Key).Handed = true
		if len(st.VTime) > w.Class && w.Tag > st.VTime[w.Class] {
			st.VTime[w.Class] = w.Tag
		}
	}
}

// grantPolicy grants as grant does, for class c and key: the classes
// below that wait count one overtake more, c's count starts again.
func (t *tx) grantPolicy(p governor.Policy, id string, weight int, ttl time.Duration, decl governor.Declaration, c int, key string) *holder {
	st := t.st
	n := classCount(p)
	if len(st.Overtakes) < n {
		st.Overtakes = append(st.Overtakes, make([]int, n-len(st.Overtakes))...)
	}
	waiting := make([]bool, n)
	for _, w := range st.Waiters {
		if w.Class < n {
			waiting[w.Class] = true
		}
	}
	st.Overtakes[c] = 0
	for j := c + 1; j < n; j++ {
		if waiting[j] {
			st.Overtakes[j]++
		} else {
			st.Overtakes[j] = 0
		}
	}
	h := t.grant(id, weight, ttl, decl)
	h.Class, h.Key = c, key
	return h
}

// expireWaiter records, for a waiter whose queue entry ended, that
// max_wait dropped it (when it did), and wakes it so that it learns.
func (t *tx) expireWaiter(w waiter) {
	p, ok := t.policy()
	if !ok || p.MaxWait == 0 || t.now.boot < w.Enqueued+int64(p.MaxWait) {
		return
	}
	t.eventBy(eventkind.MaxWait, w.ID, fmt.Sprintf("queued for %d ms; the resource allows %d ms (max_wait)",
		time.Duration(t.now.boot-w.Enqueued).Milliseconds(), p.MaxWait.Milliseconds()), "policy")
	pokePipe(t.dir, waitPrefix+escape(w.ID), true)
}

// queueExpiry is when waiter w's queue entry ends, refreshed now.
func (t *tx) queueExpiry(w waiter, queueTTL time.Duration) int64 {
	exp := t.now.boot + int64(queueTTL)
	if p, ok := t.policy(); ok && p.MaxWait > 0 {
		exp = min(exp, w.Enqueued+int64(p.MaxWait))
	}
	return exp
}

// acquirePolicy is the rest of Acquire under policy p, for a request
// neither granted nor too heavy (acquire.lua's acquire_policy).
func (b *Backend) acquirePolicy(t *tx, p governor.Policy, req governor.Request) (governor.Result, error) {
	st := t.st
	c, key := p.Rules().ClassOf(req.Priority), req.FairKey
	i := st.waiterIndex(req.ID)
	if i < 0 {
		empty := len(st.Waiters) == 0
		if empty && t.admit(p, c, key, req.Weight) == policyrule.Allows && !t.heldBack() {
			h := t.grantPolicy(p, req.ID, req.Weight, req.TTL, req.Declaration, c, key)
			return b.granted(t, req, h)
		}
		if req.Mode != governor.Wait && empty {
			return b.refused(t, req)
		}
		if req.Mode == governor.Wait && p.MaxQueue > 0 && len(st.Waiters) >= p.MaxQueue {
			st.Counters.Busy++
			t.dirty = true
			if err := t.commit(); err != nil {
				return governor.Result{}, err
			}
			return governor.Result{}, fmt.Errorf("%w: %s has max_queue %d waiters queued already", governor.ErrQueueFull, req.Key.Resource, p.MaxQueue)
		}
		t.enqueuePolicy(p, waiter{ID: req.ID, Weight: req.Weight, Exclusive: req.Exclusive, TTL: int64(req.TTL), Enqueued: t.now.boot,
			Expires: t.now.boot + int64(req.QueueTTL), Decl: req.Declaration, Class: c, Key: key})
		t.promotePolicy(p)
		if h := st.holder(req.ID); h != nil {
			h.Handed = false
			return b.granted(t, req, h)
		}
		i = st.waiterIndex(req.ID)
		if req.Mode != governor.Wait {
			st.Waiters = slices.Delete(st.Waiters, i, i+1)
			return b.refused(t, req)
		}
		st.Counters.Waited++
	}
	return b.queued(t, req, i, t.queueExpiry(st.Waiters[i], req.QueueTTL))
}

// supersede withdraws the older waiter with req's supersede key (a
// withdrawn event, and a wake-up, tell it), and with CancelInProgress
// marks the holder with it cancelled (cancelHolder) — unless that holder
// is another OS user's and req lacks CancelOthers: then it changes
// nothing and returns governor.CancelOthersRefused. The twin of lib.lua's
// supersede().
func (t *tx) supersede(req governor.Request) error {
	st := t.st
	var cancel *holder
	if h := st.SupersedeHolders[req.Supersede]; req.CancelInProgress && h != "" && h != req.ID {
		cancel = st.holder(h)
	}
	if cancel != nil && cancel.Cancel == nil && !req.CancelOthers && cancel.Decl.User != req.Declaration.User {
		// Another OS user's job (lib-supersede.lua's supersede()): nothing changes.
		return governor.CancelOthersRefused(req.Key, cancel.ID, cancel.Decl.User)
	}
	if old := st.SupersedeWaiters[req.Supersede]; old != "" && old != req.ID {
		if i := st.waiterIndex(old); i >= 0 {
			t.eventBy(eventkind.Superseded, old, fmt.Sprintf("a newer waiter with supersede key %s replaced it", req.Supersede), req.ID)
			st.Waiters = slices.Delete(st.Waiters, i, i+1)
			t.dirty = true
			pokePipe(t.dir, waitPrefix+escape(old), true)
		}
	}
	if cancel != nil {
		t.cancelHolder(cancel.ID, fmt.Sprintf("cancelled in progress by %s (user %s, session %s) with supersede key %s",
			req.ID, req.Declaration.User, req.Declaration.Session, req.Supersede), req.ID)
	}
	return nil
}

// cancelHolder marks holder id cancelled in progress, with the event
// naming by and detail: it keeps its weight, so that its work never runs
// beside its successor's, until its holder, told by its next renewal,
// stops and releases it (or it is reclaimed or expires); it is never
// renewed again. A holder cancelled already, or gone, is left as it is.
// The twin of lib-supersede.lua's cancel_holder().
func (t *tx) cancelHolder(id, detail, by string) {
	h := t.st.holder(id)
	if h == nil || h.Cancel != nil {
		return
	}
	t.event(eventkind.CancelledInProgress, id, h.Token, detail)
	e := &t.st.Events[len(t.st.Events)-1]
	e.By = by
	c := *e
	h.Cancel = &c
}

// superseding records req as the waiter or holder with its supersede key.
func (t *tx) superseding(req governor.Request, holder bool) {
	if req.Supersede == "" {
		return
	}
	m := &t.st.SupersedeWaiters
	if holder {
		m = &t.st.SupersedeHolders
	}
	if *m == nil {
		*m = map[string]string{}
	}
	if (*m)[req.Supersede] != req.ID {
		(*m)[req.Supersede] = req.ID
		t.dirty = true
	}
}
