package governor

import (
	"context"
	"time"
)

// BatchRenewer is implemented by a backend that can renew many leases
// in fewer calls than one per lease (the Redis backend: one script call
// per batch on a server, one per hash slot on a Cluster, pipelined). A
// Governor's heartbeats renew through it when its backend has it. It is
// not part of Backend: the file backend renews each lease in its own
// critical section, and gathering them would only delay each.
type BatchRenewer interface {
	// RenewBatch renews each of rs as Renew(ctx, r) would, and returns their results in the same order: each
	// lease learns its own expiry or its own loss (ErrLeaseLost, a
	// *LeaseLostError, ErrNotOwner); a call that failed as a whole gives
	// each lease its error.
	RenewBatch(ctx context.Context, rs []Renewal) []RenewalResult
}

// Renewal is a renewal of one lease (Backend.Renew, RenewBatch): its
// key, id, secret and fencing token (0: unknown), and the TTL to extend
// it by (0: its own); or, with Touch, a progress mark.
type Renewal struct {
	Key    Key
	ID     string
	Secret string
	Token  int64
	TTL    time.Duration
	Touch  bool
}

// RenewalResult is what Renew would have returned for one Renewal.
type RenewalResult struct {
	Expires time.Time
	Err     error
}
