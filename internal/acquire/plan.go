// Package acquire is the one acquire pipeline of the tool: it plans what
// a process wants from its flags, the configuration's catalog and its
// environment (what ancestors hold), and takes it in the lock order,
// slots then rate budgets, mkdir slots included. `governor run`,
// `governor acquire` and the language bridge all acquire through it.
package acquire

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/governor-dev/governor/config"
	"github.com/governor-dev/governor/governor"
)

// If-busy policies (--if-busy).
const (
	IfBusyFail = "fail"
	IfBusyWait = "wait"
	IfBusySkip = "skip"
)

// IfBusyPolicies are the values --if-busy allows.
var IfBusyPolicies = []string{IfBusyFail, IfBusyWait, IfBusySkip}

// The resources of exec runs (run.max_concurrent_runs): the project's
// run lock (limit 1) and the join slots (limit max_concurrent_runs-1).
//
// The rule, decided in NewPlan alone: a plain exec run (Request.ExecRun:
// no resource, no provider, neither Shareable nor Join) takes
// DefaultResource and the whole limit of JoinResource; Shareable takes
// DefaultResource only; Join takes one slot of JoinResource only. So two
// runs holding the lock never overlap, a plain run and a joiner never
// overlap (the plain run holds every join slot), and a shareable run and
// up to max_concurrent_runs-1 joiners do. Both resources are taken by one
// AcquireAll, in the fixed global order ("run" before "run:join": they
// share the prefix rank of lock_order, then sort by name), and each is a
// plain semaphore, so there is no moment at which a plain run holds the
// lock with a joiner still running: it holds the join slots or it does
// not run. A plain run that waits keeps its place in both FIFO queues:
// it waits holding the lock for the joiners to finish, and joiners that
// come after it queue behind it. An exec run inside an exec run takes
// none of the two (execRunInside).
const (
	DefaultResource = config.RunResource
	JoinResource    = config.RunJoinResource
)

// Request is what a process asks for: the flags of `governor run`,
// `governor acquire`, or a bridge call. The zero value of each field
// means the documented default.
type Request struct {
	Resources []string // NAME or NAME:WEIGHT specs (--resource; see ParseResource)
	Providers []string // provider names (--provider): slot provider:NAME and/or its rate budget
	// Exact takes Resources as names, never NAME:WEIGHT (`governor
	// acquire RESOURCE`, whose weight is --weight).
	Exact     bool
	Weight    int  // weight for every resource given without one (acquire --weight); 0: 1
	Limit     int  // --limit for resources the catalog has no limit for
	Exclusive bool // take the whole limit of every resource
	// Shareable and Join are the exec-run slots (run / run:join); ExecRun
	// is `governor run` with neither resource nor provider: the plain
	// exec run. See DefaultResource.
	Shareable, Join bool
	ExecRun         bool
	// IfBusy is fail, wait or skip; "" is fail, or wait when WaitTimeout
	// > 0 (ResolveIfBusy).
	IfBusy      string
	WaitTimeout time.Duration
	// TTL is the leases' time to live (0: the Governor's); with
	// ProgressTimeout a lease is lost once no progress mark came for it.
	TTL, ProgressTimeout time.Duration
	// Priority and FairKey place the waiter under a resource's queue
	// policy; Supersede, CancelInProgress and CancelOthers (--force: a
	// running holder of another OS user too): governor.AcquireOptions.
	Priority, FairKey, Supersede   string
	CancelInProgress, CancelOthers bool
	// Tokens is the token estimate to reserve from each provider's
	// tokens-per-minute budget (--tokens).
	Tokens int64
	// Budgets are spend budgets on which Cost, the call's upper-bound
	// estimate in micro-units, is reserved, all or none, after the slots
	// and rate budgets (reserveSpend; docs/budgets.md).
	Budgets []governor.SpendBudget
	Cost    int64
	// Detached leases live by TTL and `governor renew` (governor
	// acquire), and a resource bound to a mkdir slot is refused; false:
	// they heartbeat (run, bridge) and mkdir slots are taken.
	Detached bool
	// Env is the caller's environment: GOVERNOR_HELD and HEAVY_LOCK_HELD
	// say what ancestors hold (nil: none).
	Env []string
	// HolderPID is the pid written into a mkdir slot (0: governor's own;
	// a run gives its watchdog's, which outlives the command tree), and
	// Command the command line written beside it.
	HolderPID int
	Command   string
}

// Item is one resource of a plan: what to take, with which limit, and
// once acquired, how it is held.
type Item struct {
	Name   string
	Weight int // resolved: 1..Limit
	Limit  int // the limit this process asks (LimitFor)
	// Exclusive: Weight is the limit, and the backend makes it the limit
	// in force at grant (governor.Request.Exclusive).
	Exclusive bool
	Origin    string
	Policy    governor.Policy
	MkdirLock string
	MkdirNote string // said before the slot is taken (a binding nothing in the configuration shows)
	// Nested is true when an ancestor holds it (Held is its lease, as
	// GOVERNOR_HELD names it; empty for a mkdir slot HEAVY_LOCK_HELD
	// says an ancestor holds); Lease is the lease taken otherwise.
	Nested bool
	Held   HeldLease
	Lease  *governor.Lease
	asked  Resource // as given, for weigh
}

// Plan is a validated Request: the resources to take, in the order
// given, and the rate budgets after them.
type Plan struct {
	req    Request
	ifBusy string
	items  []*Item
	rates  []config.ProviderDef // providers with a rate budget, in the order given
	waited time.Duration        // by the last Acquire
	order  []string             // lock_order (checkOrder)
	// budget names the spend reservation made under no lease, open
	// for work that runs within (SetSpend).
	budget governor.BudgetOptions
	within time.Duration
}

// Waited is how long the last Acquire waited for slots, rates and spend
// budgets (0 when everything was held by ancestors), whether it got
// them or not.
func (p *Plan) Waited() time.Duration { return p.waited }

// Items are the plan's resources, in the order given; after Acquire,
// each says how it is held.
func (p *Plan) Items() []*Item { return p.items }

// SetHolder sets what a mkdir slot of the plan names: the holder's pid
// (Request.HolderPID) and command line, once they are known (a run's
// watchdog starts after its plan is checked).
func (p *Plan) SetHolder(pid int, command string) {
	p.req.HolderPID, p.req.Command = pid, command
}

// IfBusy is the resolved --if-busy policy: IfBusyFail, IfBusyWait or
// IfBusySkip.
func (p *Plan) IfBusy() string { return p.ifBusy }

// NewPlan validates req against the catalog and resolves it: each
// resource's limit (LimitFor), weight, policy and mkdir lock, the exec-run
// resources, and the providers' rate budgets. Its errors name the bad
// value and what is allowed (exit 125); nothing is touched.
func NewPlan(cat *config.Catalog, req Request) (*Plan, error) {
	ifBusy, err := ResolveIfBusy(req.IfBusy, req.WaitTimeout)
	if err != nil {
		return nil, err
	}
	if req.Limit != 0 && governor.ValidateLimit("every resource", req.Limit) != nil {
		return nil, fmt.Errorf("--limit %d; allowed: 1 to %d", req.Limit, governor.MaxLimit)
	}
	if req.Tokens < 0 {
		return nil, fmt.Errorf("--tokens %d; allowed: 0 or more", req.Tokens)
	}
	if req.Weight < 0 {
		return nil, fmt.Errorf("--weight %d; allowed: 1 to the limit", req.Weight)
	}
	if err := validSpend(req); err != nil {
		return nil, err
	}
	p := &Plan{req: req, ifBusy: ifBusy, order: cat.LockOrder}
	var rs []Resource
	for _, spec := range req.Resources {
		r := Resource{Name: spec}
		if !req.Exact {
			if r, err = ParseResource(spec, cat); err != nil {
				return nil, err
			}
		} else if err := governor.ValidateResource(spec); err != nil {
			return nil, err
		}
		rs = append(rs, r)
	}
	for _, name := range req.Providers {
		if name == "" {
			return nil, fmt.Errorf("--provider \"\": give a provider name such as anthropic")
		}
		r, err := ParseResource(governor.ProviderResource(name), cat)
		if err != nil {
			return nil, fmt.Errorf("--provider %q: %w", truncate(name, 64), err)
		}
		prov, _ := cat.Provider(name)
		if prov.RateLimited() {
			p.rates = append(p.rates, prov)
		}
		if def, _ := cat.Resource(r.Name); def.Limit == 0 && req.Limit == 0 && prov.RateLimited() {
			continue // rates only: no max_concurrency, so no slot to hold
		}
		rs = append(rs, r)
	}
	if len(rs) == 0 && len(req.Providers) > 0 && len(p.rates) > 0 {
		return p, nil // every provider is rates only
	}
	runs, err := execRun(cat, req, len(rs) == 0)
	if err != nil {
		return nil, err
	}
	rs = append(rs, runs...)
	if len(rs) == 0 {
		return nil, fmt.Errorf("no resource to hold: give a resource or a provider")
	}
	seen := map[string]bool{}
	for _, r := range rs {
		if seen[r.Name] {
			return nil, fmt.Errorf("resource %s is given twice; give each resource once", r.Name)
		}
		seen[r.Name] = true
		it, err := p.item(cat, r)
		if err != nil {
			return nil, err
		}
		p.items = append(p.items, it)
	}
	if err := p.fairKeyProblem(); err != nil {
		return nil, err
	}
	return p, nil
}

// item resolves one resource of the plan.
func (p *Plan) item(cat *config.Catalog, r Resource) (*Item, error) {
	req := p.req
	def, _ := cat.Resource(r.Name)
	if def.MkdirLock != "" && req.Detached {
		return nil, fmt.Errorf("%s is bound to the with-heavy-lock slot (resources.%s.mkdir_lock), which a lease that outlives this command cannot hold: the wrapper would not see it; use 'governor run --resource %s -- CMD'", r.Name, r.Name, r.Name)
	}
	limit, origin, err := LimitFor(cat, r.Name, req.Limit)
	if err != nil {
		return nil, err
	}
	if err := policyProblem(r.Name, def.Policy, req.Priority); err != nil {
		return nil, err
	}
	if r.Weight == 0 && req.Weight != 0 {
		r.Weight, r.flagWeight = req.Weight, true
	}
	it := &Item{Name: r.Name, Limit: limit, Exclusive: req.Exclusive || r.Every, Origin: origin, Policy: def.Policy, MkdirLock: def.MkdirLock, MkdirNote: def.MkdirNote, asked: r}
	if limit == 0 {
		return it, nil // the limit stored with the resource, else 1: weighed at Acquire
	}
	return it, p.weigh(it)
}

// weigh resolves it's weight under its limit.
func (p *Plan) weigh(it *Item) error {
	r, limit := it.asked, it.Limit
	w, err := governor.ResolveWeight(r.Name, r.Weight, limit, p.req.Exclusive)
	switch {
	case err != nil && r.flagWeight:
		return err // --weight of `governor acquire`: the library's words
	case errors.Is(err, governor.ErrTooHeavy):
		return fmt.Errorf("weight %d for %s is above its limit %d; allowed: 1 to %d (write %s:%d:1 if %q is the resource's name)",
			r.Weight, r.Name, limit, limit, r.Name, r.Weight, fmt.Sprintf("%s:%d", r.Name, r.Weight))
	case err != nil && p.req.Exclusive:
		return fmt.Errorf("--exclusive with weight %d for %s: --exclusive takes the whole limit (%d); drop one of them", r.Weight, r.Name, limit)
	case err != nil:
		return err
	}
	it.Weight = w
	return nil
}

// storedLimit gives an item without a limit (LimitFor: none configured,
// no --limit) the limit stored with its resource, else 1
// (governor.StoredLimit), and weighs it.
func (p *Plan) storedLimit(ctx context.Context, g *governor.Governor, it *Item) error {
	if it.Limit != 0 {
		return nil
	}
	n, err := g.StoredLimit(ctx, it.Name)
	if err != nil {
		return err
	}
	it.Limit = n
	return p.weigh(it)
}

// policyProblem refuses --priority on a resource without priority
// classes, naming how to configure them (the library refuses it too, in
// its own words).
func policyProblem(resource string, pol governor.Policy, priority string) error {
	if priority != "" && len(pol.Classes) == 0 {
		return fmt.Errorf("--priority %q: %s has no priority classes; configure resources.%s.priorities in exec-defaults.yaml, or drop --priority",
			truncate(priority, 64), resource, resource)
	}
	return nil
}

// fairKeyProblem refuses --fair-key when no resource of the plan has
// fairness: keys would not take turns anywhere (served FIFO), silently.
// (On several resources the key applies to those that have it.)
func (p *Plan) fairKeyProblem() error {
	if p.req.FairKey == "" || len(p.items) == 0 {
		return nil
	}
	var names []string
	for _, it := range p.items {
		if it.Policy.Fair || len(it.Policy.FairWeights) > 0 {
			return nil
		}
		names = append(names, it.Name)
	}
	r := names[0]
	return fmt.Errorf("--fair-key %q: %s has no fairness, so keys would not take turns (served FIFO); configure resources.%s.fair: true (or fair_weights) in exec-defaults.yaml, or drop --fair-key",
		truncate(p.req.FairKey, 64), strings.Join(names, ", "), r)
}

// LimitFor is the one limit rule of the tool: the limit this process
// asks for resource is the configured one when the catalog has it
// (origin names the key and where it was set), else flagLimit (--limit;
// origin ""), else 0: the limit stored with the resource, else 1, a
// mutex (governor.StoredLimit, read when acquiring). A provider's slot
// (provider:NAME) is never a mutex by default: without configuration or
// --limit it is an error naming providers.NAME.max_concurrency
// (ErrNoLimit). A flagLimit out of range is an error. What the backend
// then serves under is inForce's (limits.go): a live limit ('governor
// limit') wins over all of these.
func LimitFor(cat *config.Catalog, resource string, flagLimit int) (int, string, error) {
	if flagLimit != 0 && governor.ValidateLimit(resource, flagLimit) != nil {
		return 0, "", fmt.Errorf("--limit %d; allowed: 1 to %d", flagLimit, governor.MaxLimit)
	}
	if def, ok := cat.Resource(resource); ok && def.Limit > 0 {
		return def.Limit, def.Origin, nil
	}
	if flagLimit != 0 {
		return flagLimit, "", nil
	}
	if name, ok := strings.CutPrefix(resource, governor.ProviderResourcePrefix); ok {
		return 0, "", &noLimitError{name}
	}
	return 0, "", nil
}

// ErrNoLimit is the error of LimitFor for a provider with neither a
// configured max_concurrency nor --limit.
var ErrNoLimit = errors.New("no limit")

type noLimitError struct{ provider string }

func (e *noLimitError) Error() string {
	return fmt.Sprintf("provider %q has no max_concurrency: configure providers.%s.max_concurrency in exec-defaults.yaml, or give --limit N", e.provider, e.provider)
}

func (e *noLimitError) Is(target error) bool { return target == ErrNoLimit }

// ResolveIfBusy decides what --if-busy and --wait-timeout mean, for run
// and acquire alike: "" is fail, unless a wait timeout is given, which
// means waiting (a timeout for a wait the user did not ask for would be
// ignored silently otherwise); a wait timeout with fail or skip is
// refused. It returns IfBusyFail, IfBusyWait or IfBusySkip, or an error
// naming the bad value and what is allowed.
func ResolveIfBusy(ifBusy string, waitTimeout time.Duration) (string, error) {
	if ifBusy != "" && !slices.Contains(IfBusyPolicies, ifBusy) {
		return "", fmt.Errorf("--if-busy %q is not allowed; use fail, wait or skip", ifBusy)
	}
	if waitTimeout < 0 {
		return "", fmt.Errorf("--wait-timeout %v is not allowed; use a positive duration such as 30s", waitTimeout)
	}
	switch {
	case waitTimeout > 0 && ifBusy != "" && ifBusy != IfBusyWait:
		return "", fmt.Errorf("--wait-timeout %v with --if-busy %s: --wait-timeout bounds a wait; use --if-busy wait or drop one of them", waitTimeout, ifBusy)
	case waitTimeout > 0:
		return IfBusyWait, nil
	case ifBusy == "":
		return IfBusyFail, nil
	}
	return ifBusy, nil
}

// Resource is one resource of a request and the slots it takes.
type Resource struct {
	Name   string
	Weight int // 0: 1, or the whole limit with Exclusive
	// Every takes every slot: the whole limit in force when granted (a
	// plain exec run's join slots), decided by the backend as Exclusive.
	Every bool
	// flagWeight: Weight is --weight's (acquire), not the spec's.
	flagWeight bool
}

// ParseResource reads a --resource spec: NAME, or NAME:WEIGHT. Resource
// names contain colons themselves (issue:2316, provider:anthropic), so a
// trailing :N is a weight only when what precedes it is a configured
// resource (the catalog has it) or itself contains a colon: heavy:2 and
// provider:anthropic:2 carry weight 2, issue:2316 is a name, and
// issue:2316:1 is that name with weight 1. After a configured resource's
// name, what follows the colon can only be a weight: heavy:abc and
// heavy: are refused, never taken for a new resource (a mutex),
// unless the whole spec is configured too (run and run:join).
func ParseResource(spec string, cat *config.Catalog) (Resource, error) {
	r := Resource{Name: spec}
	if i := strings.LastIndexByte(spec, ':'); i > 0 {
		name, suffix := spec[:i], spec[i+1:]
		limits := cat.Limits()
		_, configured := limits[name]
		_, whole := limits[spec]
		switch {
		case allDigits(suffix) && (configured || strings.Contains(name, ":")):
			w, err := strconv.Atoi(suffix)
			if err != nil || w < 1 || w > governor.MaxLimit {
				return Resource{}, fmt.Errorf("--resource %q: weight %s; allowed: 1 to the resource's limit", truncate(spec, 64), truncate(suffix, 32))
			}
			r = Resource{Name: name, Weight: w}
		case configured && !whole:
			return Resource{}, fmt.Errorf("--resource %q: weight %q after the configured resource %s; allowed: a whole number from 1 to its limit", truncate(spec, 64), truncate(suffix, 32), name)
		}
	}
	if err := governor.ValidateResource(r.Name); err != nil {
		return Resource{}, fmt.Errorf("--resource %q: %s", truncate(spec, 64), strings.TrimPrefix(err.Error(), governor.ErrInvalid.Error()+": "))
	}
	return r, nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// execRun returns the run-lock resources of req (see DefaultResource):
// those of Shareable or Join, or, for the plain exec run (no other
// resource), the lock and every join slot.
func execRun(cat *config.Catalog, req Request, none bool) ([]Resource, error) {
	plain := req.ExecRun && none
	limits := cat.Limits()
	if _, ok := limits[DefaultResource]; !ok && (plain || req.Shareable || req.Join) {
		return nil, fmt.Errorf("no resource to hold: give --resource NAME or --provider NAME, or configure run.max_concurrent_runs in exec-defaults.yaml for the run lock %q", DefaultResource)
	}
	joins, hasJoin := limits[JoinResource]
	switch {
	case req.Shareable && req.Join:
		return nil, fmt.Errorf("--shareable with --join: a run either holds the run lock and accepts joiners (--shareable) or joins one (--join); drop one of them")
	case req.Join && !hasJoin:
		return nil, fmt.Errorf("--join: run.max_concurrent_runs is 1, so there are no join slots (run:join has max_concurrent_runs-1); raise run.max_concurrent_runs in exec-defaults.yaml, or drop --join")
	case req.Join:
		return []Resource{{Name: JoinResource}}, nil
	case req.Shareable:
		return []Resource{{Name: DefaultResource}}, nil
	case !plain:
		return nil, nil
	case hasJoin:
		return []Resource{{Name: DefaultResource}, {Name: JoinResource, Weight: joins, Every: true}}, nil
	}
	return []Resource{{Name: DefaultResource}}, nil
}

// truncate shortens s for messages: a bad value can be huge.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
