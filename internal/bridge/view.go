package bridge

import (
	"time"

	"github.com/governor-dev/governor/governor"
)

// holder is one holder as `governor slots --json` names its fields.
type holder struct {
	LeaseID     string    `json:"lease_id"`
	Session     string    `json:"session"`
	Host        string    `json:"host"`
	PID         int       `json:"pid"`
	GovernorPID int       `json:"governor_pid,omitempty"`
	Weight      int       `json:"weight"`
	Token       int64     `json:"token"`
	AcquiredAt  time.Time `json:"acquired_at"`
	HeartbeatAt time.Time `json:"heartbeat_at"`
	ExpiresAt   time.Time `json:"expires_at"`
	Command     string    `json:"command"`
}

func holders(st governor.Status) []holder {
	out := make([]holder, 0, len(st.Holders))
	for _, h := range st.Holders {
		out = append(out, holder{LeaseID: h.LeaseID, Session: h.Session, Host: h.Host, PID: h.PID, GovernorPID: h.GovernorPID,
			Weight: h.Weight, Token: h.Token, AcquiredAt: h.AcquiredAt.UTC(), HeartbeatAt: h.Heartbeat.UTC(),
			ExpiresAt: h.Expires.UTC(), Command: h.Command})
	}
	return out
}

// waiter is one queued acquire, as `governor slots --json` names its
// fields.
type waiter struct {
	ID         string    `json:"id"`
	Session    string    `json:"session"`
	PID        int       `json:"pid"`
	Weight     int       `json:"weight"`
	EnqueuedAt time.Time `json:"enqueued_at"`
}

// resourceView is one resource of the slots result.
type resourceView struct {
	Resource string   `json:"resource"`
	Limit    int      `json:"limit"`
	Used     int      `json:"used"`
	Free     int      `json:"free"`
	Holders  []holder `json:"holders"`
	Waiters  []waiter `json:"waiters"`
}

func viewOf(resource string, st governor.Status) resourceView {
	v := resourceView{Resource: resource, Limit: st.Limit, Used: st.Used, Free: max(st.Limit-st.Used, 0),
		Holders: holders(st), Waiters: []waiter{}}
	for _, w := range st.Waiters {
		v.Waiters = append(v.Waiters, waiter{ID: w.ID, Session: w.Session, PID: w.PID, Weight: w.Weight, EnqueuedAt: w.EnqueuedAt.UTC()})
	}
	return v
}
