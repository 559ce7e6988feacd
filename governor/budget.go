package governor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/governor-dev/governor/governor/naming"
)

// ErrNoBudget: an operator named a budget that is neither configured nor
// with state (the CLI's check; the backend acts on any valid name).
var ErrNoBudget = errors.New("governor: no such budget")

// Budget amounts are integers of millionths of the budget's unit
// (micro-units): $40 is 40_000_000. Integers keep sums exact on every
// backend (a Lua number holds them exactly up to 2^53).
const (
	// MicroUnit is the number of budget amount units in one unit.
	MicroUnit = 1_000_000
	// MaxBudgetAmount bounds every limit and amount: 1e15 micro-units
	// (a billion units), far below 2^53.
	MaxBudgetAmount = 1_000_000_000_000_000
	// MaxBudgetsPerCall bounds the budgets one reservation charges.
	MaxBudgetsPerCall = 32
	// DefaultBudgetTTL is how long a reservation that rides on no lease
	// stays open unsettled before it is counted as spent at its
	// estimate (Governor.Hold's rule).
	DefaultBudgetTTL = time.Hour
)

// maxBudgetTTL bounds a reservation's TTL.
const maxBudgetTTL = 7 * 24 * time.Hour

// BudgetCharge is one budget's part of a reservation.
type BudgetCharge struct {
	// Name is the budget's name (ValidateBudgetName's rules).
	Name string
	// Limit is the configured limit. The first reservation keeps it
	// with the state (with Soft); later ones are checked against the
	// state's, whatever they say. An operator changes it (BudgetSetLimit
	// for a while, BudgetDefine for good).
	Limit int64
	// Soft is the soft threshold (0: none): crossing it records an
	// eventkind.BudgetSoft, nothing is refused.
	Soft int64
	// Start and End are the window the caller holds current; the backend
	// checks its own clock lies in it (BudgetResult.Mismatch).
	Start, End time.Time
	// Amount is the estimate to reserve (0 or more).
	Amount int64
	// Born is the budget state's birth as the caller last saw it (zero:
	// never seen). A state that is gone or born since is evidence of
	// lost data: the budget is then held (BudgetState.Held).
	Born time.Time
	// Def is the budget's definition as the caller has it, its unit and
	// window (SpendBudget.Definition; "": not stated, not checked). The
	// first reservation that states one keeps it with the state; a
	// reservation whose Def differs is refused (BudgetResult.Reason
	// "drift", Refused.Def the state's), changing nothing: only an
	// operator's BudgetDefine changes it.
	Def string
}

// BudgetRequest reserves the charges of one call, all or none.
type BudgetRequest struct {
	Project string
	// Lease names the reservation; BudgetSettle names it again. Lease
	// ids are public (a run's id, a lease's): what proves the
	// reservation is Secret.
	Lease string
	// Secret proves the reservation: BudgetSettle (and a retried
	// BudgetReserve of the same Lease) must give it, else ErrNotOwner
	// and nothing changes. The backend keeps only its SHA-1.
	Secret string
	// TTL is how long the reservation stays open unsettled (zero:
	// DefaultBudgetTTL); after it, it counts as
	// spent at its estimate. A reservation whose Lease and Secret are a
	// lease's is renewed with the lease, to its expiry.
	TTL     time.Duration
	Charges []BudgetCharge
	// By names who reserves, for events.
	By string
}

// BudgetState is a budget as the backend keeps it.
type BudgetState struct {
	Name string
	// Limit in force (an operator's BudgetSetLimit, else the state's:
	// the first reservation's, or the last BudgetDefine's).
	Limit int64
	// LimitBy names the operator who set the limit in force ("" when
	// it is the configured one).
	LimitBy  string
	Soft     int64
	Spent    int64
	Reserved int64
	// Start and End bound the window in force; End is the reset time. A
	// read after the window ended shows the next one begun: Start the old
	// End, End zero (the caller computes it from the BudgetWindow).
	Start, End time.Time
	// Born is when this state was made (loss evidence, see BudgetCharge.Born).
	Born time.Time
	// Paused names who paused it ("" when not paused).
	Paused string
	// Held is set while the budget refuses after evidence of lost data,
	// until End or an operator's BudgetConfirm; it says why.
	Held     string
	Overruns int64
	// Open is the number of reservations not settled yet.
	Open int64
	// Def is the definition kept with the state (BudgetCharge.Def; ""
	// until a reservation or an operator states one).
	Def string
}

// Remaining is what a reservation may still take: limit − spent −
// reserved, never below 0.
func (s BudgetState) Remaining() int64 { return max(s.Limit-s.Spent-s.Reserved, 0) }

// BudgetResult is a reservation's decision: a refusal is data.
type BudgetResult struct {
	Allowed bool
	// Mismatch: the backend's clock (Now) lies outside a charge's
	// window; nothing changed, compute the windows at Now and retry.
	Mismatch bool
	// Now is the backend's clock.
	Now time.Time
	// Refused is the first budget that refused (Allowed false, not
	// Mismatch), and Reason why: "exhausted", "paused" or "held".
	Refused BudgetState
	Reason  string
	// States are the charged budgets after the decision, in the order of
	// the request's charges.
	States []BudgetState
}

// BudgetAmount is an actual cost charged to one budget.
type BudgetAmount struct {
	// Name is the budget's; "" gives the actual of every budget of the
	// reservation that no other BudgetAmount of the settle names (for a
	// caller that knows the reservation but not its budgets).
	Name   string
	Amount int64
	// Born is the budget's birth as the caller saw it at reserve (loss
	// evidence when the reservation is gone).
	Born time.Time
}

// SettleRequest is a settle (BudgetBackend.BudgetSettle): the
// reservation Lease of Project, proven by Secret, closed at Actual by
// By; with, optionally, a release and a token adjustment sent with it.
type SettleRequest struct {
	Project string
	Lease   string
	Secret  string
	Actual  []BudgetAmount
	By      string
	// Release is a slot lease of Project released with the settle
	// (Backend.Release of its resource, id and secret).
	Release *Handle
	// Adjust is a token adjustment made with the settle (RateAdjust).
	Adjust *RateAdjustment
}

// BudgetSettlement says what a settle did.
type BudgetSettlement struct {
	// Settled is false when the lease had no open reservation: settled
	// before, or counted at its estimate after its TTL. Nothing changed.
	Settled bool
	// Overruns names the budgets whose actual was above the estimate.
	Overruns []string
	// ReleaseErr and AdjustErr are the outcomes of the release and the
	// adjustment sent with the settle (SettleRequest.Release, Adjust):
	// nil when none was sent or it succeeded.
	ReleaseErr error `json:"-"`
	AdjustErr  error `json:"-"`
}

// BudgetOp is an operator's action on a budget.
type BudgetOp string

// The admin actions on a budget; each records an event with its actor.
const (
	BudgetSetLimit BudgetOp = "limit"   // Value is the new limit; 0 clears it
	BudgetReset    BudgetOp = "reset"   // spent to 0, open reservations kept
	BudgetPause    BudgetOp = "pause"   // refuse every reservation
	BudgetResume   BudgetOp = "resume"  // end a pause
	BudgetConfirm  BudgetOp = "confirm" // lift a loss hold
)

// BudgetDefine is the action that makes def a budget's definition (its
// unit and window: SpendBudget.Definition) and the value given with it
// its limit, replacing an operator's BudgetSetLimit: the explicit apply
// of a configuration ('governor budget NAME --apply'). The window in
// force runs to its end with its spent; the next follows def, starting
// no earlier than that end. The op is "define " followed by def; a
// backend reads def back with strings.CutPrefix(op, BudgetDefine("")).
func BudgetDefine(def string) BudgetOp { return BudgetOp("define " + def) }

// validDef checks a budget definition: printable, at most naming.MaxNameLen.
func validDef(name, def string) error {
	if len(def) > naming.MaxNameLen || strings.ContainsFunc(def, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return invalid("budget %s definition %q; allowed: at most %d printable characters (a unit and a window)", name, def, naming.MaxNameLen)
	}
	return nil
}

// BudgetEvent is one thing that happened to a budget.
type BudgetEvent struct {
	At     time.Time
	Budget string
	Kind   string
	By     string
	Lease  string
	Detail string
}

// BudgetBackend is the optional capability of a backend for spend budgets.
// All budgets of a project live together, so that one call checks and
// charges several atomically. Time is the backend's wall clock (the
// Redis server's TIME, the machine's clock).
type BudgetBackend interface {
	// BudgetReserve charges every charge of req, or none: none when a
	// charge's window does not hold the backend's now (Mismatch), when a
	// budget is paused or held, or when spent + reserved + amount would
	// pass its limit (Refused, Reason). A lease already open (a retried
	// reserve) is allowed again without charging anything more, when
	// req.Secret proves it; else ErrNotOwner (see NotBudgetOwner).
	BudgetReserve(ctx context.Context, req BudgetRequest) (BudgetResult, error)
	// BudgetSettle closes req.Lease's reservation: each budget's
	// estimate leaves Reserved and its actual (req.Actual, by name; the
	// name "" for every budget not named, else a budget not named is
	// settled at its estimate) joins Spent — in full, with an
	// eventkind.BudgetOverrun, when above the estimate. A lease without an
	// open reservation changes nothing (Settled false), unless a named
	// budget's state is gone or born after the Born it gives: then that
	// budget is held (eventkind.BudgetHeld) and the actual counted.
	// req.Secret must prove the open reservation (BudgetRequest.Secret):
	// else ErrNotOwner (NotBudgetOwner) and nothing changes. A
	// reservation made before reservations had secrets is settled
	// without one.
	//
	// req.Release and req.Adjust, when set, are sent with the settle (on
	// Redis one pipeline, whose parts go to their nodes at once on a
	// Cluster), so that a call's settle costs no round trip of its own:
	// the lease's Release, and the token adjustment RateAdjust. The
	// parts are independent: each does what it does alone, whatever the
	// others find, and reports its own outcome in the settlement
	// (ReleaseErr, AdjustErr), also when the settle returns an error;
	// bad settle input (ErrInvalid) settles nothing and still sends
	// them.
	BudgetSettle(ctx context.Context, req SettleRequest) (BudgetSettlement, error)
	// Budgets reads the budgets of project with state (names nil: all),
	// without changing them, ordered by name, with the backend's now. A
	// budget is shown as it holds at now, as the next write would leave
	// it: a reservation past its TTL counted at its estimate (in the
	// window its expiry falls in), and a window that has ended shown as
	// the next begun (BudgetState.Start and End), with what counted after
	// its end spent and no hold.
	Budgets(ctx context.Context, project string, names []string) ([]BudgetState, time.Time, error)
	// BudgetAdmin applies op to budget name as by. A budget without state
	// is made first (with an empty window: the next reservation opens
	// one), so that an operator acts on a budget nothing has used yet.
	BudgetAdmin(ctx context.Context, project, name string, op BudgetOp, value int64, by string) error
	// BudgetEvents lists the project's budget events, oldest first, at
	// most backendkit.MaxBudgetEvents.
	BudgetEvents(ctx context.Context, project string) ([]BudgetEvent, error)
}

// NotBudgetOwner is the error of a backend that refused a settle (or a
// retried reserve) of reservation lease whose secret does not prove it.
func NotBudgetOwner(project, lease string) error {
	return fmt.Errorf("%w: spend reservation %s of project %s: the secret given does not prove it (settle it with %s)",
		ErrNotOwner, lease, project, spendKeyForm)
}

// spendKeyForm says how a spend reservation is named to a settle in
// another process (ParseSpendKey), for messages.
const spendKeyForm = "RESERVATION.SECRET, its id and its secret (GOVERNOR_SPEND inside 'governor run --cost')"

// SpendKey is what names and proves reservation r to a settle in another
// process: "LEASE.SECRET" (ParseSpendKey reads it). Show it to no one
// else: with it, anyone can settle r.
func (r *BudgetReservation) SpendKey() string { return r.Lease + "." + r.Secret }

// ParseSpendKey reads a SpendKey: the lease id before its last '.', the
// secret after it (a secret holds no '.'). An id without a secret is an
// ErrInvalid saying so.
func ParseSpendKey(s string) (lease, secret string, err error) {
	i := strings.LastIndexByte(s, '.')
	if i <= 0 || i == len(s)-1 {
		return "", "", invalid("spend reservation %q has no secret; allowed: %s", s, spendKeyForm)
	}
	return s[:i], s[i+1:], nil
}

// ValidateBudgetRequest checks req as every backend needs it: a valid
// project, lease and names, amounts and limits in range, windows with
// Start before End, at most MaxBudgetsPerCall charges, no name twice.
func ValidateBudgetRequest(req BudgetRequest) error {
	if err := ValidateProject(req.Project); err != nil {
		return err
	}
	if err := validateName("lease id", req.Lease, naming.MaxNameLen); err != nil {
		return err
	}
	if req.Secret == "" || len(req.Secret) > naming.MaxNameLen {
		return invalid("budget reservation %s with a secret of %d bytes; allowed: 1 to %d (what proves the reservation to its settle)",
			req.Lease, len(req.Secret), naming.MaxNameLen)
	}
	if len(req.Charges) == 0 || len(req.Charges) > MaxBudgetsPerCall {
		return invalid("%d budgets in one reservation; allowed: 1 to %d", len(req.Charges), MaxBudgetsPerCall)
	}
	if req.TTL < 0 || req.TTL > maxBudgetTTL {
		return invalid("budget reservation ttl %v; allowed: 0 (default %v) to %v", req.TTL, DefaultBudgetTTL, maxBudgetTTL)
	}
	seen := map[string]bool{}
	for _, c := range req.Charges {
		if err := ValidateBudgetName(c.Name); err != nil {
			return err
		}
		if seen[c.Name] {
			return invalid("budget %q twice in one reservation; allowed: each once", c.Name)
		}
		seen[c.Name] = true
		if err := validAmount("budget "+c.Name+" limit", c.Limit); err != nil {
			return err
		}
		if err := validAmount("budget "+c.Name+" estimate", c.Amount); err != nil {
			return err
		}
		if c.Soft < 0 || c.Soft > c.Limit {
			return invalid("budget %s soft threshold %d; allowed: 0 (none) to the limit %d", c.Name, c.Soft, c.Limit)
		}
		if !c.Start.Before(c.End) || c.Start.UnixMilli() < 0 {
			return invalid("budget %s window %v to %v; allowed: a start after 1970 before the end", c.Name, c.Start, c.End)
		}
		if err := validDef(c.Name, c.Def); err != nil {
			return err
		}
	}
	return nil
}

func validAmount(what string, v int64) error {
	if v < 0 || v > MaxBudgetAmount {
		return invalid("%s %d; allowed: 0 to %d micro-units", what, v, int64(MaxBudgetAmount))
	}
	return nil
}

// ValidateBudgetAdmin checks an admin action's arguments.
func ValidateBudgetAdmin(project, name string, op BudgetOp, value int64) error {
	if err := ValidateProject(project); err != nil {
		return err
	}
	if err := ValidateBudgetName(name); err != nil {
		return err
	}
	switch op {
	case BudgetSetLimit:
		return validAmount("budget "+name+" limit", value)
	case BudgetReset, BudgetPause, BudgetResume, BudgetConfirm:
		return nil
	}
	if def, ok := strings.CutPrefix(string(op), string(BudgetDefine(""))); ok {
		if def == "" {
			return invalid("budget %s definition empty; allowed: a unit and a window", name)
		}
		if err := validDef(name, def); err != nil {
			return err
		}
		return validAmount("budget "+name+" limit", value)
	}
	return invalid("budget action %q; allowed: limit, reset, pause, resume, confirm, define", op)
}

// ValidateBudgetSettle checks a settle's arguments: a valid project and
// lease, valid names (or "", every budget not named) each once, amounts
// in range.
func ValidateBudgetSettle(project, lease string, actual []BudgetAmount) error {
	if err := ValidateProject(project); err != nil {
		return err
	}
	if err := validateName("lease id", lease, naming.MaxNameLen); err != nil {
		return err
	}
	if len(actual) > MaxBudgetsPerCall {
		return invalid("%d budgets in one settlement; allowed: at most %d", len(actual), MaxBudgetsPerCall)
	}
	seen := map[string]bool{}
	for _, a := range actual {
		if a.Name == "" && !seen[""] {
			seen[""] = true // every budget not named
			if err := validAmount("actual cost", a.Amount); err != nil {
				return err
			}
			continue
		}
		if err := ValidateBudgetName(a.Name); err != nil {
			return err
		}
		if seen[a.Name] {
			return invalid("budget %q twice in one settlement; allowed: each once", a.Name)
		}
		seen[a.Name] = true
		if err := validAmount("budget "+a.Name+" actual cost", a.Amount); err != nil {
			return err
		}
	}
	return nil
}
