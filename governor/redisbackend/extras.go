package redisbackend

import (
	"context"
	"errors"
	"time"

	"github.com/governor-dev/governor/governor"
)

// Takeover implements governor.Backend.
func (b *Backend) Takeover(ctx context.Context, key governor.Key, old string, req governor.Request) (governor.Result, error) {
	return governor.Result{}, errors.ErrUnsupported
}

// NextSeq implements governor.Backend.
func (b *Backend) NextSeq(ctx context.Context, project, name string, token int64) (int64, error) {
	return 0, errors.ErrUnsupported
}

// Events implements governor.Backend.
func (b *Backend) Events(ctx context.Context, key governor.Key, since time.Time) ([]governor.Event, error) {
	return nil, errors.ErrUnsupported
}
