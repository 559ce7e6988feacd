package governor

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/governor-dev/governor/governor/internal/policyrule"
	"github.com/governor-dev/governor/governor/leasetiming"
)

// Policy is how a resource's queue serves its waiters (issue 15). The
// zero value is strict FIFO, today's default: no classes, no fairness,
// no bounds. A policy is stored with the resource, like its limit: the
// policy in force changes only while the resource is idle (no holder, no
// waiter), and a process asking for another one meanwhile is drift
// (Status.DriftPolicy, an eventkind.Drift); its waiters are then served under
// the policy in force.
//
// The rules, exactly (docs/queue-policies.md has one example of each):
//
//   - Order. Classes are ordered, highest first. A waiter's class is the
//     one its Priority names, or DefaultClass. The queue serves the
//     highest class that has a waiter it may grant; within a class, fair
//     keys take turns (below), and one key's waiters are FIFO. The head
//     that does not fit in the free slots blocks every lower class (a
//     heavy higher-class waiter is never starved by lighter lower ones).
//   - Reserve. A grant of weight w to class i is allowed only if after it
//     the free slots still cover, for every higher class j, the part of
//     its reserve it does not use: limit - used - w >= sum over j < i of
//     max(0, Reserve_j - used_j). Always, whether or not class j waits.
//     A class's own reserve never limits it. A head that the reserve
//     blocks blocks every lower class too.
//   - Cap. Class i never holds more than Cap_i slots (0: no cap). A class
//     at its cap is passed over: lower classes are served meanwhile.
//     Classes without a cap borrow any free slot no reserve keeps.
//   - Anti-starvation. Each class counts the grants to higher classes made
//     while it had waiters since its own last grant. Once that count
//     reaches MaxOvertakes, its head is looked at before any other class:
//     granted if every rule allows it; if only the free slots stop it,
//     the grants stop until it fits (it blocks, as a FIFO head does); if
//     its cap, fair cap or a reserve above it stops it, the usual order
//     applies. So a waiter at the head of a lower class is overtaken by
//     at most MaxOvertakes grants, while its cap and the reserves above
//     it let it in.
//   - Fairness. Within a class, each waiter gets the tag max(V, last tag
//     of its key) + 1/weight(key), V being the tag of the class's last
//     grant; the smallest tag is served first (start-time fair queueing).
//     One key queuing 100 waiters thus delays another key's single waiter
//     by at most one grant per active key (weighted: a key of weight 2
//     gets two turns for one of a key of weight 1).
//   - Fair cap. A key never holds more than FairCap slots (0: no cap). A
//     head whose key is at its cap is passed over for the next waiter of
//     the same class, looking at most backendkit.PolicySkip waiters deep.
//   - Eager. A head that does not fit in the free slots (only that: not
//     a reserve) may be passed by later waiters of its class that the
//     rules allow now, looking at most backendkit.PolicySkip deep, backendkit.EagerPasses times
//     at most; then it blocks as under FIFO until it fits.
//   - MaxQueue: an acquire that would queue while MaxQueue waiters are
//     queued is refused at once (ErrQueueFull). MaxWait: a waiter queued
//     for MaxWait is dropped (ErrMaxWait).
type Policy struct {
	// Classes, highest first; empty: one class.
	Classes []Class
	// MaxOvertakes is the anti-starvation bound (default
	// DefaultMaxOvertakes when there are classes).
	MaxOvertakes int
	// Fair turns fairness across fair keys on (it is on, too, when
	// FairWeights or FairCap is set); off, fair keys are shown only and
	// every class is FIFO.
	Fair bool
	// FairWeights weighs fair keys (default weight 1).
	FairWeights map[string]int
	// FairCap bounds the slots one fair key holds (0: none).
	FairCap int
	// MaxQueue bounds the waiters queued (0: none).
	MaxQueue int
	// MaxWait bounds how long a waiter stays queued (0: none).
	MaxWait time.Duration
	// Eager lets lighter waiters pass a head that does not fit, at most
	// backendkit.EagerPasses times (config policy: eager); false is strict FIFO,
	// where the head blocks.
	Eager bool
}

// Class is one priority class of a Policy.
type Class struct {
	Name string
	// Reserve is the slots lower classes may never take from this one.
	Reserve int
	// Cap bounds the slots this class holds (0: none).
	Cap int
}

// Bounds of a Policy.
const (
	maxClasses          = 8
	DefaultMaxOvertakes = policyrule.DefaultMaxOvertakes
	maxFairWeight       = 1000
)

// IsZero tells a policy that is plain FIFO.
func (p Policy) IsZero() bool {
	return len(p.Classes) == 0 && p.MaxOvertakes == 0 && !p.Fair && len(p.FairWeights) == 0 && p.FairCap == 0 &&
		p.MaxQueue == 0 && p.MaxWait == 0 && !p.Eager
}

// validPolicyName tells a class name or fair key governor accepts: 1 to
// 64 of A-Z a-z 0-9 . _ - @ (stored unescaped in backend records).
func validPolicyName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' || c == '@') {
			return false
		}
	}
	return true
}

// policyNameRule says what a class name or fair key may be.
const policyNameRule = "1 to 64 of A-Z a-z 0-9 . _ - @"

// Validate checks p for resource (limit: its limit, 0 when not known).
func (p Policy) Validate(resource string, limit int) error {
	if len(p.Classes) > maxClasses {
		return invalid("%d priority classes for %s; allowed: at most %d", len(p.Classes), resource, maxClasses)
	}
	seen := map[string]bool{}
	reserved := 0
	for i, c := range p.Classes {
		if !validPolicyName(c.Name) {
			return invalid("priority class %q of %s; allowed: %s", c.Name, resource, policyNameRule)
		}
		if seen[c.Name] {
			return invalid("priority class %q of %s given twice", c.Name, resource)
		}
		seen[c.Name] = true
		if c.Reserve < 0 || c.Cap < 0 {
			return invalid("priority class %s of %s: reserve %d, cap %d; allowed: 0 or more", c.Name, resource, c.Reserve, c.Cap)
		}
		if limit > 0 && c.Cap > limit {
			return invalid("priority class %s of %s: cap %d; allowed: 0 (none) to the limit %d", c.Name, resource, c.Cap, limit)
		}
		if i < len(p.Classes)-1 {
			reserved += c.Reserve
		} else if c.Reserve > 0 {
			return invalid("priority class %s of %s is the lowest: reserve %d; allowed: 0 (no class is below it)", c.Name, resource, c.Reserve)
		}
	}
	if limit > 0 && reserved > limit-1 {
		return invalid("the reserves of %s sum to %d; allowed: at most the limit %d minus 1 (the lowest class needs a slot)", resource, reserved, limit)
	}
	if p.MaxOvertakes < 0 || p.MaxOvertakes > 1000 {
		return invalid("max_overtakes %d for %s; allowed: 1 to 1000 (0: the default %d)", p.MaxOvertakes, resource, DefaultMaxOvertakes)
	}
	for k, w := range p.FairWeights {
		if !validPolicyName(k) {
			return invalid("fair key %q of %s; allowed: %s", k, resource, policyNameRule)
		}
		if w < 1 || w > maxFairWeight {
			return invalid("fair weight %d of key %s of %s; allowed: 1 to %d", w, k, resource, maxFairWeight)
		}
	}
	if p.FairCap < 0 || (limit > 0 && p.FairCap > limit) {
		return invalid("fair_cap %d for %s; allowed: 0 (none) to the limit", p.FairCap, resource)
	}
	if p.MaxQueue < 0 || p.MaxQueue > maxQueueBound {
		return invalid("max_queue %d for %s; allowed: 0 (none) to %d", p.MaxQueue, resource, maxQueueBound)
	}
	if p.MaxWait < 0 || (p.MaxWait > 0 && p.MaxWait < time.Millisecond) || p.MaxWait > leasetiming.MaxTTL {
		return invalid("max_wait %v for %s; allowed: 0 (none) or 1ms to %v", p.MaxWait, resource, leasetiming.MaxTTL)
	}
	return nil
}

const maxQueueBound = 1 << 20

// classNames lists the classes' names, for an error.
func (p Policy) classNames() string {
	names := make([]string, len(p.Classes))
	for i, c := range p.Classes {
		names[i] = c.Name
	}
	return strings.Join(names, ", ")
}

// Encode returns p's canonical form, as backends store it: equal
// policies encode equally, and "" is FIFO. The form is read by the Redis
// scripts (lib-policy.lua's policy()) and by ParsePolicy:
//
//	c=NAME:RESERVE:CAP,...;k=MAXOVERTAKES;fair=0|1;fc=FAIRCAP;mq=MAXQUEUE;mw=MS;e=0|1;fw=KEY:W,...;
func (p Policy) Encode() string {
	if p.IsZero() {
		return ""
	}
	var b strings.Builder
	b.WriteString("c=")
	for i, c := range p.Classes {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s:%d:%d", c.Name, c.Reserve, c.Cap)
	}
	fair := 0
	if p.Rules().IsFair() {
		fair = 1
	}
	eager := 0
	if p.Eager {
		eager = 1
	}
	fmt.Fprintf(&b, ";k=%d;fair=%d;fc=%d;mq=%d;mw=%d;e=%d;fw=", p.Rules().Overtakes(), fair, p.FairCap, p.MaxQueue, p.MaxWait.Milliseconds(), eager)
	keys := make([]string, 0, len(p.FairWeights))
	for k := range p.FairWeights {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s:%d", k, p.FairWeights[k])
	}
	b.WriteByte(';')
	return b.String()
}

// ParsePolicy reads Encode's form back.
func ParsePolicy(s string) (Policy, error) {
	var p Policy
	if s == "" {
		return p, nil
	}
	bad := func() (Policy, error) { return Policy{}, invalid("stored policy %q does not read", s) }
	for _, part := range strings.Split(strings.TrimSuffix(s, ";"), ";") {
		name, val, ok := strings.Cut(part, "=")
		if !ok {
			return bad()
		}
		switch name {
		case "c", "fw":
			if val == "" {
				continue
			}
			for _, item := range strings.Split(val, ",") {
				f := strings.Split(item, ":")
				nums := make([]int, len(f)-1)
				for i := range nums {
					n, err := strconv.Atoi(f[i+1])
					if err != nil {
						return bad()
					}
					nums[i] = n
				}
				if name == "c" && len(f) == 3 {
					p.Classes = append(p.Classes, Class{Name: f[0], Reserve: nums[0], Cap: nums[1]})
				} else if name == "fw" && len(f) == 2 {
					if p.FairWeights == nil {
						p.FairWeights = map[string]int{}
					}
					p.FairWeights[f[0]] = nums[0]
				} else {
					return bad()
				}
			}
		case "k", "fair", "fc", "mq", "mw", "e":
			n, err := strconv.Atoi(val)
			if err != nil {
				return bad()
			}
			switch name {
			case "k":
				p.MaxOvertakes = n
			case "fair":
				p.Fair = n == 1
			case "e":
				p.Eager = n == 1
			case "fc":
				p.FairCap = n
			case "mq":
				p.MaxQueue = n
			case "mw":
				p.MaxWait = time.Duration(n) * time.Millisecond
			}
		default:
			return bad()
		}
	}
	if err := p.Validate("the resource", 0); err != nil {
		return Policy{}, err
	}
	return p, nil
}

// checkRequest checks what an acquire asks of p: its priority names a
// class, its fair key reads, and its weight can ever be granted in its
// class (Never: within its cap, the limit less the reserves above it,
// and the fair_cap).
func (p Policy) checkRequest(resource string, limit, weight int, priority, fairKey string) error {
	if err := p.Validate(resource, limit); err != nil {
		return err
	}
	r := p.Rules()
	c, ok := r.ClassIndex(priority)
	if !ok {
		if len(p.Classes) == 0 {
			return invalid("priority %q for %s; allowed: none (the resource has no priority classes)", priority, resource)
		}
		return invalid("priority %q for %s; allowed: %s", priority, resource, p.classNames())
	}
	if fairKey != "" && !validPolicyName(fairKey) {
		return invalid("fair key %q for %s; allowed: %s", fairKey, resource, policyNameRule)
	}
	switch r.Never(limit, c, fairKey, weight) {
	case policyrule.Capped:
		return fmt.Errorf("%w: weight %d for %s; class %s is capped at %d", ErrTooHeavy, weight, resource, p.Classes[c].Name, p.Classes[c].Cap)
	case policyrule.Reserved: // only with classes: weight is within the limit
		above := r.ReservedAbove(c)
		return fmt.Errorf("%w: weight %d for %s; class %s may use at most %d of %d (the classes above reserve %d)",
			ErrTooHeavy, weight, resource, p.Classes[c].Name, limit-above, limit, above)
	case policyrule.FairCapped:
		return fmt.Errorf("%w: weight %d for %s; fair key %s may hold at most %d (fair_cap)", ErrTooHeavy, weight, resource, fairKey, p.FairCap)
	}
	return nil
}
