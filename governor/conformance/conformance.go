// Package conformance is the one test suite every governor backend must
// pass unchanged. A backend's tests call Run with a Harness that opens
// backends on one shared store and moves its clock.
package conformance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/governor/eventkind"
)

// Harness connects the suite to a backend under test.
type Harness struct {
	// Open returns a new backend on the store under test, as another
	// process of the same machine would open it (a backend that keeps a
	// machine's witness of the store, as Redis's does, shares it). The
	// harness closes it at test cleanup.
	Open func(t *testing.T) governor.Backend
	// OpenElsewhere, if set, is Open as a process of another machine,
	// which shares nothing with Open's (no witness). Unset: Open.
	OpenElsewhere func(t *testing.T) governor.Backend
	// Advance moves the store's clock forward by at least d. A store on
	// real time sleeps.
	Advance func(t *testing.T, d time.Duration)
	// RealTime is true when Advance sleeps: the suite then keeps the
	// amounts of time it skips small.
	RealTime bool
	// Corrupt, if set, damages the stored state of key as a foreign
	// write could: the holder record of lease id (or the whole state)
	// no longer parses. The suite then checks that the damage is a
	// governor.ErrBackend that ends a wait.
	Corrupt func(t *testing.T, key governor.Key, leaseID string)
	// Damage, if set, writes one contradiction d into the stored state
	// of key, as a foreign write, an eviction or a partial loss could
	// (lease names the holder or waiter it concerns), and returns true;
	// false when this store cannot hold that contradiction (the test
	// then skips).
	Damage func(t *testing.T, key governor.Key, lease string, d Damage) bool
	// Lose, if set, makes the store forget everything, as Redis
	// restarted without persistence does. Backends on it must hold back
	// grants where they have evidence of the loss (see LostDataHeldBack).
	Lose func(t *testing.T)
	// Crash, if set, ends backend b as a SIGKILL of its process would:
	// nothing released, nothing handed back, every proof of life the
	// backend keeps for its leases (the file backend's locked lease
	// files) gone at once. Unset: b.Close().
	Crash func(t *testing.T, b governor.Backend)
}

// Damage is a contradiction in a backend's stored state.
type Damage int

const (
	// DamageUsed: the stored weight held says -5 (a store that keeps no
	// such count cannot hold it).
	DamageUsed Damage = iota + 1
	// DamageNoState: the holders are left without the rest of the
	// state (limit, counters, records): Redis's state hash deleted.
	DamageNoState
	// DamageNoHolders: the state is left without the set of holders.
	DamageNoHolders
	// DamageQueueEntry: waiter lease's queue entry no longer reads.
	DamageQueueEntry
	// DamageEvent: one more event, which does not read.
	DamageEvent
	// DamageOverLimit: five more holders, copies of holder lease (same
	// weight and expiry), beyond the limit, the count of weight held
	// agreeing.
	DamageOverLimit
)

// Run runs the whole suite.
func Run(t *testing.T, h Harness) {
	s := &suite{h: h}
	tests := []struct {
		name string
		fn   func(*testing.T)
	}{
		{"GrantWithinLimit", s.grantWithinLimit},
		{"Weights", s.weights},
		{"TooHeavy", s.tooHeavy},
		{"RefusalQueueLen", s.refusalQueueLen},
		{"ReleaseByIDOnly", s.releaseByIDOnly},
		{"RenewNeverReacquires", s.renewNeverReacquires},
		{"BatchRenew", s.batchRenew},
		{"OwnerSecret", s.ownerSecret},
		{"GovernorReleaseHandle", s.governorReleaseHandle},
		{"ExpiryFreesSlot", s.expiryFreesSlot},
		{"EarliestExpiryHonoured", s.earliestExpiryHonoured},
		{"TokensIncrease", s.tokensIncrease},
		{"FIFOHandOff", s.fifoHandOff},
		{"HandedGrant", s.handedGrant},
		{"HeadOfLineBlocks", s.headOfLineBlocks},
		{"DeadWaiterSkipped", s.deadWaiterSkipped},
		{"Cancel", s.cancel},
		{"Reclaim", s.reclaim},
		{"Status", s.status},
		{"LimitDrift", s.limitDrift},
		{"ProjectsIsolated", s.projectsIsolated},
		{"Counters", s.counters},
		{"LeaseHeartbeat", s.leaseHeartbeat},
		{"LeaseLostClosesDone", s.leaseLostClosesDone},
		{"BatchedHeartbeats", s.batchedHeartbeats},
		{"WaitAcrossBackends", s.waitAcrossBackends},
		{"GovernorFIFO", s.governorFIFO},
		{"CancelledWaitLeavesNothing", s.cancelledWaitLeavesNothing},
		{"DeadOwnerReclaimed", s.deadOwnerReclaimed},
		{"CrashedHolderOwnerAlive", s.crashedHolderOwnerAlive},
		{"BusyErrorNamesHolders", s.busyErrorNamesHolders},
		{"AcquireAllNoDeadlock", s.acquireAllNoDeadlock},
		{"AcquireAllReleasesOnFailure", s.acquireAllReleasesOnFailure},
		{"HammerNeverOverLimit", s.hammer},
		{"RateBurstAndRetry", s.rateBurstAndRetry},
		{"RateTokensReserveSettle", s.rateTokensReserveSettle},
		{"RateWindowBound", s.rateWindowBound},
		{"ProviderGate", s.providerGate},
		{"Events", s.events},
		{"WatchdogKillEvent", s.watchdogKillEvent},
		{"Seq", s.seq},
		{"BackendTakeover", s.backendTakeover},
		{"BackendTakeoverEnded", s.backendTakeoverEnded},
		{"GovernorTakeover", s.governorTakeover},
		{"GovernorTakeoverSession", s.governorTakeoverSession},
		{"BackendProgress", s.backendProgress},
		{"GovernorProgress", s.governorProgress},
		{"CloseEndsWaits", s.closeEndsWaits},
		{"UseAfterClose", s.useAfterClose},
		{"MalformedStateEndsWait", s.malformedStateEndsWait},
		{"DamagedUsedNeverOverGrants", s.damagedUsed},
		{"DamagedNoStateNeverOverGrants", s.damagedNoState},
		{"DamagedNoHoldersNotStuck", s.damagedNoHolders},
		{"DamagedQueueEntrySkipped", s.damagedQueueEntry},
		{"DamagedEventReported", s.damagedEvent},
		{"DamagedOverLimitNotStuck", s.damagedOverLimit},
		{"LostDataHeldBack", s.lostDataHeldBack},
		{"LostDataNewcomer", s.lostDataNewcomer},
		{"LostDataWaiterNewcomer", s.lostDataWaiterNewcomer},
		{"LostDataRenewByHandle", s.lostDataRenewByHandle},
		{"LostDataNewProcess", s.lostDataNewProcess},
		{"LostDataIdleMachine", s.lostDataIdleMachine},
		{"ForgetNotLoss", s.forgetNotLoss},
		{"Forget", s.forget},
		{"Histograms", s.histograms},
		{"RateStatus", s.rateStatus},
		{"Withdraw", s.withdraw},
		{"GovernorCancel", s.governorCancel},
		{"Pause", s.pause},
		{"LiveLimit", s.liveLimit},
		{"ExclusiveLiveLimit", s.exclusiveLiveLimit},
		{"ExclusiveDrift", s.exclusiveDrift},
		{"ExclusiveQueuedResolvedAtGrant", s.exclusiveQueuedResolvedAtGrant},
		{"ClearLimitToConfigured", s.clearLimitToConfigured},
		{"PolicyCancelOthers", s.policyCancelOthers},
		{"Holds", s.holds},
		{"PolicyClassOrder", s.policyClassOrder},
		{"PolicyReserve", s.policyReserve},
		{"PolicyCap", s.policyCap},
		{"PolicyAntiStarvation", s.policyAntiStarvation},
		{"PolicyFairKeys", s.policyFairKeys},
		{"PolicyFairCap", s.policyFairCap},
		{"PolicyBounds", s.policyBounds},
		{"PolicyDrift", s.policyDrift},
		{"PolicyHammer", s.policyHammer},
		{"PolicySupersede", s.policySupersede},
		{"PolicyCancelExpires", s.policyCancelExpires},
		{"PolicyEager", s.policyEager},
		{"PolicyStarvingNotInReserve", s.policyStarvingNotInReserve},
		{"CoolOffHoldsBack", s.coolOffHoldsBack},
		{"CoolOffProvider", s.coolOffProvider},
		{"CoolOffUnderPolicy", s.coolOffUnderPolicy},
		{"AdaptiveAIMD", s.adaptiveAIMD},
		{"AdaptiveProvider", s.adaptiveProvider},
		{"GrantLimit", s.grantLimit},
		{"LearnedBudget", s.learnedBudget},
		{"ShadowRates", s.shadowRates},
		{"RetriedNewAcquire", s.retriedNewAcquire},
		{"BudgetReserveSettle", s.budgetReserveSettle},
		{"BudgetAllOrNone", s.budgetAllOrNone},
		{"BudgetOverrun", s.budgetOverrun},
		{"BudgetAbandoned", s.budgetAbandoned},
		{"BudgetRenewedWithLease", s.budgetRenewedWithLease},
		{"BudgetWindow", s.budgetWindow},
		{"BudgetReadNow", s.budgetReadNow},
		{"BudgetAdmin", s.budgetAdmin},
		{"BudgetLoss", s.budgetLoss},
		{"BudgetLossNewProcess", s.budgetLossNewProcess},
		{"BudgetBadInput", s.budgetBadInput},
		{"BudgetSecret", s.budgetSecret},
		{"BudgetDrift", s.budgetDrift},
		{"BudgetDefinition", s.budgetDefinition},
		{"BudgetHammer", s.budgetHammer},
		{"BudgetGovernor", s.budgetGovernor},
		{"BudgetReleaseSettle", s.budgetReleaseSettle},
		{"BudgetDoSpend", s.budgetDoSpend},
		{"BudgetSettleEvery", s.budgetSettleEvery},
		{"BudgetRateReserve", s.budgetRateReserve},
		{"BudgetDoSpendRates", s.budgetDoSpendRates},
		{"BudgetRateAdjustSettle", s.budgetRateAdjustSettle},
		{"BudgetDoSpendTokens", s.budgetDoSpendTokens},
		{"CapacityFairShare", s.capacityFairShare},
		{"CapacityGiveBack", s.capacityGiveBack},
		{"CapacityExpiry", s.capacityExpiry},
		{"CapacityQueue", s.capacityQueue},
		{"CapacityRefused", s.capacityRefused},
		{"CapacityLearning", s.capacityLearning},
		{"CapacityHammer", s.capacityHammer},
		{"CapacityPaused", s.capacityPaused},
		{"CapacityCrash", s.capacityCrash},
		{"CapacityDeadOwner", s.capacityDeadOwner},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.fn)
	}
}

type suite struct{ h Harness }

// occupancy counts the workers inside a protected section now, and the
// most there ever were at once.
type occupancy struct{ now, most atomic.Int64 }

func (o *occupancy) enter() {
	n := o.now.Add(1)
	for {
		m := o.most.Load()
		if n <= m || o.most.CompareAndSwap(m, n) {
			return
		}
	}
}

func (o *occupancy) leave() { o.now.Add(-1) }

// project returns a project name no other test uses, so tests on a
// shared server never see each other's keys.
func project() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "ct-" + hex.EncodeToString(b[:])
}

// holdSpends is an Ask of spend budgets alone: its reservation, or why
// not.
func holdSpends(ctx context.Context, g *governor.Governor, spends []governor.BudgetSpend, o governor.BudgetOptions) (*governor.BudgetReservation, error) {
	if h, err := g.Hold(ctx, governor.Ask{Spends: spends, Budget: o}); err != nil {
		return nil, err
	} else {
		return h.Spend, nil
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func id() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// req builds a backend request with a fresh id.
func req(key governor.Key, limit, weight int, mode governor.Mode) governor.Request {
	return governor.Request{Key: key, ID: id(), Limit: limit, Weight: weight, TTL: 30 * time.Second,
		Mode: mode, QueueTTL: 30 * time.Second,
		Declaration: governor.Declaration{Session: "s-" + id()[:4], Host: "conformance", PID: 0}}
}

func mustAcquire(t *testing.T, b governor.Backend, r governor.Request, want governor.Outcome) governor.Result {
	t.Helper()
	res, err := b.Acquire(ctxT(t), r)
	if err != nil {
		t.Fatalf("Acquire(%s weight %d): %v", r.Key, r.Weight, err)
	}
	if res.Outcome != want {
		t.Fatalf("Acquire(%s weight %d) outcome = %v, want %v (status %+v)", r.Key, r.Weight, res.Outcome, want, res.Status)
	}
	return res
}

// open opens the harness's backend and names resource in a project no
// other test uses.
func (s *suite) open(t *testing.T, resource string) (governor.Backend, governor.Key) {
	return s.h.Open(t), governor.Key{Project: project(), Resource: resource}
}

// release releases lease id (no secret) of key, or fails t.
func release(t *testing.T, b governor.Backend, key governor.Key, id string) {
	t.Helper()
	if err := b.Release(ctxT(t), key, id, ""); err != nil {
		t.Fatalf("Release(%s, %s): %v", key, id, err)
	}
}

// wantNotHeld fails t unless releasing lease id of key is ErrNotHeld:
// what names the release.
func wantNotHeld(t *testing.T, b governor.Backend, key governor.Key, id, what string) {
	t.Helper()
	if err := b.Release(ctxT(t), key, id, ""); !errors.Is(err, governor.ErrNotHeld) {
		t.Fatalf("%s: err = %v, want ErrNotHeld", what, err)
	}
}

// mustSetLimit sets key's live limit as by, or fails t.
func mustSetLimit(t *testing.T, b governor.Backend, key governor.Key, limit int, by string) {
	t.Helper()
	if err := actionErr(b.Admin(ctxT(t), key, governor.Action{Kind: eventkind.Limit, Limit: limit, By: by})); err != nil {
		t.Fatalf("SetLimit(%s, %d): %v", key, limit, err)
	}
}

func mustStatus(t *testing.T, b governor.Backend, key governor.Key) governor.Status {
	t.Helper()
	st, err := b.Status(ctxT(t), key)
	if err != nil {
		t.Fatalf("Status(%s): %v", key, err)
	}
	return st
}

// mustLease acquires resource through g, or fails t.
func mustLease(t *testing.T, g *governor.Governor, resource string, o governor.AcquireOptions) *governor.Lease {
	t.Helper()
	l, err := g.Acquire(ctxT(t), resource, o)
	if err != nil {
		t.Fatalf("Acquire(%s): %v", resource, err)
	}
	return l
}

func newGovernor(t *testing.T, b governor.Backend, opts governor.Options) *governor.Governor {
	t.Helper()
	g, err := governor.New(b, opts)
	if err != nil {
		t.Fatalf("governor.New: %v", err)
	}
	t.Cleanup(func() { _ = g.Close() })
	return g
}
