package governor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/governor-dev/governor/governor/eventkind"
	"github.com/governor-dev/governor/governor/naming"
)

// ErrNoWaiter reports a Cancel that found no queued waiter to withdraw:
// the waiter id or session names none (granted meanwhile, gone, or never
// queued). Nothing changes.
var ErrNoWaiter = errors.New("governor: no such waiter")

// CancelSelector picks the waiters Cancel withdraws: the one with WaiterID, or every waiter of Session (exactly one of the two).
type CancelSelector struct {
	WaiterID string
	Session  string
}

// maxActor bounds the length of an admin action's label (its by).
const maxActor = 200

// Identity names this Governor as the actor of an admin action: user,
// session, host and pid.
func (g *Governor) Identity() string {
	return fmt.Sprintf("%s (session %s, pid %d on %s)", osUser(), g.decl.Session, g.self.PID, g.self.Host)
}

// CancelOthersRefused is the error of a cancel in progress that would
// stop holder, of OS user user, for another user's acquire without
// CancelOthers: ErrInvalid, nothing changed.
func CancelOthersRefused(key Key, holder, user string) error {
	if user == "" {
		user = "(not recorded)"
	}
	return invalid("cancel-in-progress on %s: holder %s belongs to OS user %s, not to you (%s); allowed: another user's job only with CancelOthers (governor run --force)",
		key, holder, user, osUser())
}

// osUser names the OS user of this process: its user name, else $USER,
// else its uid.
func osUser() string {
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	if name == "" {
		name = fmt.Sprintf("uid %d", os.Getuid())
	}
	return name
}

// actor is who acts: this Governor's Identity (the OS user, session,
// pid and host, which by cannot forge), and by, checked, beside it as a
// label ("" for none).
func (g *Governor) actor(by string) (string, error) {
	if by == "" {
		return g.Identity(), nil
	}
	if len(by) > maxActor || !utf8.ValidString(by) {
		return "", invalid("actor %q; allowed: up to %d bytes of UTF-8 text", naming.Truncate(by, 40), maxActor)
	}
	for _, r := range by {
		if !unicode.IsPrint(r) {
			return "", invalid("actor %q; allowed: printable text, no control characters", by)
		}
	}
	return fmt.Sprintf("%s as %q", g.Identity(), by), nil
}

// admin checks resource and by for an admin action and returns the key
// and the actor.
func (g *Governor) admin(resource, by string) (Key, string, error) {
	if err := ValidateResource(resource); err != nil {
		return Key{}, "", err
	}
	who, err := g.actor(by)
	if err != nil {
		return Key{}, "", err
	}
	return Key{g.project, resource}, who, nil
}

// Cancel withdraws the waiters of resource that sel picks (a WaiterID
// may be a prefix, of at least 8 characters, of one waiter's id), recording for
// each an eventkind.Cancelled naming this Governor's Identity, with by as a
// label beside it ("" none).
// Their acquires end with a *WithdrawnError saying who cancelled them;
// the room they leave goes to the queue at once. It returns the waiters
// withdrawn, in queue order. None to withdraw is ErrNoWaiter; a bad
// selector (a prefix of several waiters' ids too), resource or by is
// ErrInvalid; either way nothing changes.
// Holders are never cancelled (see Takeover).
func (g *Governor) Cancel(ctx context.Context, resource string, sel CancelSelector, by string) ([]Waiter, error) {
	key, who, err := g.admin(resource, by)
	if err != nil {
		return nil, err
	}
	if (sel.WaiterID == "") == (sel.Session == "") {
		return nil, invalid("cancel of %s: waiter id %q and session %q; allowed: exactly one of the two", resource, sel.WaiterID, sel.Session)
	}
	st, err := g.b.Status(ctx, key)
	if err != nil {
		return nil, err
	}
	var ids []string
	picked := map[string]Waiter{}
	ws, several := pickWaiters(st.Waiters, sel)
	for _, w := range ws {
		ids = append(ids, w.ID)
		picked[w.ID] = w
	}
	what := fmt.Sprintf("waiter %q", sel.WaiterID)
	if sel.Session != "" {
		what = fmt.Sprintf("a waiter of session %q", sel.Session)
	}
	switch {
	case several > 1:
		return nil, invalid("waiter %q of %s: the prefix names %d waiters; give more of the id", sel.WaiterID, resource, several)
	case len(ids) == 0:
		return nil, fmt.Errorf("%w: %s is not queued on %s (%d waiting)", ErrNoWaiter, what, resource, len(st.Waiters))
	}
	res, err := g.b.Admin(ctx, key, Action{Kind: eventkind.Cancelled, By: who, Detail: "cancelled by an operator", IDs: ids})
	if err != nil {
		return nil, err
	}
	gone := res.IDs
	if len(gone) == 0 {
		return nil, fmt.Errorf("%w: %s of %s left the queue (granted or gone) before it could be cancelled", ErrNoWaiter, what, resource)
	}
	out := make([]Waiter, 0, len(gone))
	for _, id := range gone {
		out = append(out, picked[id])
	}
	return out, nil
}

// minWaiterPrefix is the shortest waiter id prefix Cancel takes (slots
// shows 12 characters).
const minWaiterPrefix = 8

// pickWaiters returns the waiters sel picks: those of sel.Session, or the
// one whose id is sel.WaiterID, else the one waiter whose id starts with
// it (at least minWaiterPrefix characters). When several start with it,
// it returns none and how many.
func pickWaiters(ws []Waiter, sel CancelSelector) ([]Waiter, int) {
	var out []Waiter
	if sel.Session != "" {
		for _, w := range ws {
			if w.Session == sel.Session {
				out = append(out, w)
			}
		}
		return out, 0
	}
	for _, w := range ws {
		if w.ID == sel.WaiterID {
			return []Waiter{w}, 0
		}
		if len(sel.WaiterID) >= minWaiterPrefix && strings.HasPrefix(w.ID, sel.WaiterID) {
			out = append(out, w)
		}
	}
	if len(out) > 1 {
		return nil, len(out)
	}
	return out, 0
}

// Pause stops resource granting anything new, by any path, recording an
// eventkind.Paused naming this Governor's Identity, labelled by ("" none). Holders keep
// their leases and finish; waiters keep their place. Pausing a paused
// resource changes nothing. Bad input is ErrInvalid, changing nothing.
func (g *Governor) Pause(ctx context.Context, resource, by string) error {
	key, who, err := g.admin(resource, by)
	if err != nil {
		return err
	}
	_, err = g.b.Admin(ctx, key, Action{Kind: eventkind.Paused, By: who})
	return err
}

// Resume undoes Pause, recording an eventkind.Resumed naming this Governor's
// Identity, labelled by ("" none): the room the
// resource has goes to the head of the queue at once. Resuming a resource
// that is not paused changes nothing. Bad input is ErrInvalid, changing
// nothing.
func (g *Governor) Resume(ctx context.Context, resource, by string) error {
	key, who, err := g.admin(resource, by)
	if err != nil {
		return err
	}
	_, err = g.b.Admin(ctx, key, Action{Kind: eventkind.Resumed, By: who})
	return err
}

// ClearLimit clears resource's live limit and puts configured (the limit
// the configuration gives it; 0 when it gives none) in force at once, so
// that the next release hands off under it, recording an eventkind.Limit as
// SetLimit does. With configured 0 it is SetLimit(ctx, resource, 0, by).
// Bad input is ErrInvalid, changing nothing.
func (g *Governor) ClearLimit(ctx context.Context, resource string, configured int, by string) error {
	if configured == 0 {
		return g.SetLimit(ctx, resource, 0, by)
	}
	key, who, err := g.admin(resource, by)
	if err != nil {
		return err
	}
	if err := ValidateLimit(resource, configured); err != nil {
		return fmt.Errorf("%w (the configured limit to clear back to)", err)
	}
	_, err = g.b.Admin(ctx, key, Action{Kind: eventkind.Limit, Back: configured, By: who})
	return err
}

// SetLimit sets the limit in force live; limit 0 clears it (back to the
// limit a process asked for meanwhile; ClearLimit goes back to the
// configured one).
//
// A live limit (1 to MaxLimit) wins over the limit processes ask for
// (AcquireOptions.Limit, exec-defaults.yaml, --limit) until cleared;
// cleared, the limit in force goes back to the one a process asked for
// meanwhile, or stays until a process asks for another while the
// resource is idle. Holders keep their leases; raised, the room goes to
// the head of the queue at once; lowered below the weight held, nothing
// is granted until the use falls under it. It records an eventkind.Limit
// naming this Governor's Identity, labelled by ("" none). Bad input is
// ErrInvalid, changing nothing.
func (g *Governor) SetLimit(ctx context.Context, resource string, limit int, by string) error {
	key, who, err := g.admin(resource, by)
	if err != nil {
		return err
	}
	if limit != 0 {
		if err := ValidateLimit(resource, limit); err != nil {
			return fmt.Errorf("%w (0 clears the live limit)", err)
		}
	}
	_, err = g.b.Admin(ctx, key, Action{Kind: eventkind.Limit, Limit: limit, By: who})
	return err
}
