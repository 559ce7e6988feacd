// Package conformance is the one test suite every governor backend must
// pass unchanged. A backend's tests call Run with a Harness that opens
// backends on one shared store and moves its clock.
package conformance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
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

// Run runs the whole suite, one test after another, on h's store.
func Run(t *testing.T, h Harness) {
	s := &suite{h: h}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(s, t) })
	}
}

// RunParallel runs the whole suite in lanes side by side, each lane on a
// store of its own that newStore makes with the lane's t (its servers,
// directories and clock end with the lane): stores that share nothing,
// as the suite's tests on one store are not written to run at once.
// Each lane takes the suite's next test not yet taken, so on each store
// a part of the suite runs one test after another, in Run's order. A
// test's name carries its lane: -run 'TestX//Name' picks a test whatever
// lane takes it.
func RunParallel(t *testing.T, lanes int, newStore func(t *testing.T) Harness) {
	var next atomic.Int64
	for i := range lanes {
		t.Run(fmt.Sprintf("lane%d", i+1), func(t *testing.T) {
			t.Parallel()
			s := &suite{h: newStore(t)}
			for n := next.Add(1); n <= int64(len(tests)); n = next.Add(1) {
				tt := tests[n-1]
				t.Run(tt.name, func(t *testing.T) { tt.fn(s, t) })
			}
		})
	}
}

// tests is the whole suite, in the order it runs on one store.
var tests = []struct {
	name string
	fn   func(*suite, *testing.T)
}{
	{"GrantWithinLimit", (*suite).grantWithinLimit},
	{"Weights", (*suite).weights},
	{"TooHeavy", (*suite).tooHeavy},
	{"RefusalQueueLen", (*suite).refusalQueueLen},
	{"ReleaseByIDOnly", (*suite).releaseByIDOnly},
	{"RenewNeverReacquires", (*suite).renewNeverReacquires},
	{"BatchRenew", (*suite).batchRenew},
	{"OwnerSecret", (*suite).ownerSecret},
	{"GovernorReleaseHandle", (*suite).governorReleaseHandle},
	{"ExpiryFreesSlot", (*suite).expiryFreesSlot},
	{"EarliestExpiryHonoured", (*suite).earliestExpiryHonoured},
	{"TokensIncrease", (*suite).tokensIncrease},
	{"FIFOHandOff", (*suite).fifoHandOff},
	{"HandedGrant", (*suite).handedGrant},
	{"HeadOfLineBlocks", (*suite).headOfLineBlocks},
	{"DeadWaiterSkipped", (*suite).deadWaiterSkipped},
	{"Cancel", (*suite).cancel},
	{"Reclaim", (*suite).reclaim},
	{"Status", (*suite).status},
	{"LimitDrift", (*suite).limitDrift},
	{"ProjectsIsolated", (*suite).projectsIsolated},
	{"Counters", (*suite).counters},
	{"LeaseHeartbeat", (*suite).leaseHeartbeat},
	{"LeaseLostClosesDone", (*suite).leaseLostClosesDone},
	{"BatchedHeartbeats", (*suite).batchedHeartbeats},
	{"WaitAcrossBackends", (*suite).waitAcrossBackends},
	{"GovernorFIFO", (*suite).governorFIFO},
	{"CancelledWaitLeavesNothing", (*suite).cancelledWaitLeavesNothing},
	{"DeadOwnerReclaimed", (*suite).deadOwnerReclaimed},
	{"CrashedHolderOwnerAlive", (*suite).crashedHolderOwnerAlive},
	{"BusyErrorNamesHolders", (*suite).busyErrorNamesHolders},
	{"AcquireAllNoDeadlock", (*suite).acquireAllNoDeadlock},
	{"AcquireAllReleasesOnFailure", (*suite).acquireAllReleasesOnFailure},
	{"HammerNeverOverLimit", (*suite).hammer},
	{"RateBurstAndRetry", (*suite).rateBurstAndRetry},
	{"RateTokensReserveSettle", (*suite).rateTokensReserveSettle},
	{"RateWindowBound", (*suite).rateWindowBound},
	{"ProviderGate", (*suite).providerGate},
	{"Events", (*suite).events},
	{"WatchdogKillEvent", (*suite).watchdogKillEvent},
	{"Seq", (*suite).seq},
	{"BackendTakeover", (*suite).backendTakeover},
	{"BackendTakeoverEnded", (*suite).backendTakeoverEnded},
	{"GovernorTakeover", (*suite).governorTakeover},
	{"GovernorTakeoverSession", (*suite).governorTakeoverSession},
	{"BackendProgress", (*suite).backendProgress},
	{"GovernorProgress", (*suite).governorProgress},
	{"CloseEndsWaits", (*suite).closeEndsWaits},
	{"UseAfterClose", (*suite).useAfterClose},
	{"MalformedStateEndsWait", (*suite).malformedStateEndsWait},
	{"DamagedUsedNeverOverGrants", (*suite).damagedUsed},
	{"DamagedNoStateNeverOverGrants", (*suite).damagedNoState},
	{"DamagedNoHoldersNotStuck", (*suite).damagedNoHolders},
	{"DamagedQueueEntrySkipped", (*suite).damagedQueueEntry},
	{"DamagedEventReported", (*suite).damagedEvent},
	{"DamagedOverLimitNotStuck", (*suite).damagedOverLimit},
	{"LostDataHeldBack", (*suite).lostDataHeldBack},
	{"LostDataNewcomer", (*suite).lostDataNewcomer},
	{"LostDataWaiterNewcomer", (*suite).lostDataWaiterNewcomer},
	{"LostDataRenewByHandle", (*suite).lostDataRenewByHandle},
	{"LostDataNewProcess", (*suite).lostDataNewProcess},
	{"LostDataIdleMachine", (*suite).lostDataIdleMachine},
	{"LostDataShareNewProcess", (*suite).lostDataShareNewProcess},
	{"ForgetNotLoss", (*suite).forgetNotLoss},
	{"Forget", (*suite).forget},
	{"Histograms", (*suite).histograms},
	{"RateStatus", (*suite).rateStatus},
	{"Withdraw", (*suite).withdraw},
	{"GovernorCancel", (*suite).governorCancel},
	{"Pause", (*suite).pause},
	{"LiveLimit", (*suite).liveLimit},
	{"ExclusiveLiveLimit", (*suite).exclusiveLiveLimit},
	{"ExclusiveDrift", (*suite).exclusiveDrift},
	{"ExclusiveQueuedResolvedAtGrant", (*suite).exclusiveQueuedResolvedAtGrant},
	{"ClearLimitToConfigured", (*suite).clearLimitToConfigured},
	{"PolicyCancelOthers", (*suite).policyCancelOthers},
	{"Holds", (*suite).holds},
	{"PolicyClassOrder", (*suite).policyClassOrder},
	{"PolicyReserve", (*suite).policyReserve},
	{"PolicyCap", (*suite).policyCap},
	{"PolicyAntiStarvation", (*suite).policyAntiStarvation},
	{"PolicyFairKeys", (*suite).policyFairKeys},
	{"PolicyFairCap", (*suite).policyFairCap},
	{"PolicyBounds", (*suite).policyBounds},
	{"PolicyDrift", (*suite).policyDrift},
	{"PolicyHammer", (*suite).policyHammer},
	{"PolicySupersede", (*suite).policySupersede},
	{"PolicyCancelExpires", (*suite).policyCancelExpires},
	{"PolicyEager", (*suite).policyEager},
	{"PolicyStarvingNotInReserve", (*suite).policyStarvingNotInReserve},
	{"CoolOffHoldsBack", (*suite).coolOffHoldsBack},
	{"CoolOffProvider", (*suite).coolOffProvider},
	{"CoolOffUnderPolicy", (*suite).coolOffUnderPolicy},
	{"AdaptiveAIMD", (*suite).adaptiveAIMD},
	{"AdaptiveProvider", (*suite).adaptiveProvider},
	{"GrantLimit", (*suite).grantLimit},
	{"LearnedBudget", (*suite).learnedBudget},
	{"ShadowRates", (*suite).shadowRates},
	{"RetriedNewAcquire", (*suite).retriedNewAcquire},
	{"BudgetReserveSettle", (*suite).budgetReserveSettle},
	{"BudgetAllOrNone", (*suite).budgetAllOrNone},
	{"BudgetOverrun", (*suite).budgetOverrun},
	{"BudgetAbandoned", (*suite).budgetAbandoned},
	{"BudgetRenewedWithLease", (*suite).budgetRenewedWithLease},
	{"BudgetWindow", (*suite).budgetWindow},
	{"BudgetReadNow", (*suite).budgetReadNow},
	{"BudgetAdmin", (*suite).budgetAdmin},
	{"BudgetLoss", (*suite).budgetLoss},
	{"BudgetLossNewProcess", (*suite).budgetLossNewProcess},
	{"BudgetBadInput", (*suite).budgetBadInput},
	{"BudgetSecret", (*suite).budgetSecret},
	{"BudgetDrift", (*suite).budgetDrift},
	{"BudgetDefinition", (*suite).budgetDefinition},
	{"BudgetHammer", (*suite).budgetHammer},
	{"BudgetGovernor", (*suite).budgetGovernor},
	{"BudgetReleaseSettle", (*suite).budgetReleaseSettle},
	{"BudgetDoSpend", (*suite).budgetDoSpend},
	{"BudgetSettleEvery", (*suite).budgetSettleEvery},
	{"BudgetRateReserve", (*suite).budgetRateReserve},
	{"BudgetDoSpendRates", (*suite).budgetDoSpendRates},
	{"BudgetRateAdjustSettle", (*suite).budgetRateAdjustSettle},
	{"BudgetDoSpendTokens", (*suite).budgetDoSpendTokens},
	{"CapacityFairShare", (*suite).capacityFairShare},
	{"CapacityGiveBack", (*suite).capacityGiveBack},
	{"CapacityExpiry", (*suite).capacityExpiry},
	{"CapacityQueue", (*suite).capacityQueue},
	{"CapacityRefused", (*suite).capacityRefused},
	{"CapacityLearning", (*suite).capacityLearning},
	{"CapacityHammer", (*suite).capacityHammer},
	{"CapacityPaused", (*suite).capacityPaused},
	{"CapacityCrash", (*suite).capacityCrash},
	{"CapacityDeadOwner", (*suite).capacityDeadOwner},
	{"RateShareFairShare", (*suite).rateShareFairShare},
	{"RateShareCentral", (*suite).rateShareCentral},
	{"RateShareGiveBack", (*suite).rateShareGiveBack},
	{"RateShareRefused", (*suite).rateShareRefused},
	{"RateShareLearning", (*suite).rateShareLearning},
	{"RateShareLearningNewProcess", (*suite).rateShareLearningNewProcess},
	{"RateShareCoolOff", (*suite).rateShareCoolOff},
	{"RateShareDeadOwner", (*suite).rateShareDeadOwner},
	{"RateShareStatus", (*suite).rateShareStatus},
	{"RateShareTokenStatus", (*suite).rateShareTokenStatus},
	{"RateShareTokens", (*suite).rateShareTokens},
	{"CapacityReclaimBeforeOwn", (*suite).capacityReclaimBeforeOwn},
	{"CapacityStatus", (*suite).capacityStatus},
	{"CapacityLocalGrants", (*suite).capacityLocalGrants},
	{"CapacityNotForgotten", (*suite).capacityNotForgotten},
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
