package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/governor-dev/governor/governor"
	"github.com/governor-dev/governor/internal/acquire"
)

// Held is what one acquire took, as the acquire pipeline returns it
// (*acquire.Held).
type Held interface {
	Leases() []*governor.Lease
	Nested() []string
	Env() []string
	Lost() <-chan struct{}
	Release(ctx context.Context) error
}

// Events are told by the pipeline while it acquires (acquire.Events).
type Events struct {
	OnQueued func(resource string, r governor.Result)
	OnNote   func(msg string)
}

// Pipeline is the one acquire pipeline of the CLI (internal/acquire):
// it validates a, takes its resources in the lock order (mkdir slots
// included) and, on failure, leaves nothing held and returns an error
// that maps to its exit code.
type Pipeline func(ctx context.Context, g *governor.Governor, a AcquireArgs, ev Events) (Held, error)

// AcquireArgs are the args of acquire: the flags of `governor run` and
// `governor acquire`, in snake_case.
type AcquireArgs struct {
	Resources        []string          `json:"resources"`
	Providers        []string          `json:"providers"`
	Weight           int               `json:"weight"`
	Limit            int               `json:"limit"`
	Exclusive        bool              `json:"exclusive"`
	Shareable        bool              `json:"shareable"`
	Join             bool              `json:"join"`
	ExecRun          bool              `json:"exec_run"` // with no resource: the project's plain exec run (run and every join slot)
	IfBusy           string            `json:"if_busy"`
	WaitTimeout      Seconds           `json:"wait_timeout"`
	TTL              Seconds           `json:"ttl"`
	ProgressTimeout  Seconds           `json:"progress_timeout"`
	Priority         string            `json:"priority"`
	FairKey          string            `json:"fair_key"`
	Supersede        string            `json:"supersede"`
	CancelInProgress bool              `json:"cancel_in_progress"`
	Tokens           Count             `json:"tokens"`
	Env              map[string]string `json:"env"`
	// Budgets are spend budgets on which Estimate, the call's
	// upper-bound cost in their unit, is reserved with the slots, all or
	// none (docs/budgets.md); settle tells the actual cost after.
	// With neither, the configured budgets whose scope holds the call
	// are charged as 'governor run --provider --cost' charges them; Model
	// is the call's model (the budgets' models scope, the price table's
	// PROVIDER/MODEL), MaxTokens its max_tokens: without an estimate, the
	// price table prices it (Tokens the input), as run --max-tokens.
	Budgets   []BudgetArg `json:"budgets"`
	Estimate  *Amount     `json:"estimate"`
	Model     string      `json:"model"`
	MaxTokens Count       `json:"max_tokens"`
	// spend is the call's planned spend (server.planSpend); nil: none.
	spend *acquire.Spend
	// Record asks for the result's record: what a wait record says of
	// the resources (acquire.RecordOf, as governor run --record).
	Record bool `json:"record"`
}

// EnvList is a.Env as KEY=VALUE entries, the form of an environment.
func (a AcquireArgs) EnvList() []string {
	var env []string
	for k, v := range a.Env {
		env = append(env, k+"="+v)
	}
	return env
}

// Seconds is a duration given in seconds (a JSON number, fractions
// allowed).
type Seconds time.Duration

// UnmarshalJSON reads a number of seconds, refusing a negative one.
func (s *Seconds) UnmarshalJSON(b []byte) error {
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("%s is not a number of seconds", b)
	}
	if f < 0 || f > float64(1<<62)/float64(time.Second) {
		return fmt.Errorf("%s seconds; allowed: 0 or more", b)
	}
	*s = Seconds(f * float64(time.Second))
	return nil
}

// D is s as a time.Duration.
func (s Seconds) D() time.Duration { return time.Duration(s) }
