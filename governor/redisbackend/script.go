package redisbackend

import (
	"context"
	"errors"
	"sync"

	"github.com/redis/go-redis/v9"
)

// script is a redis.Script made at its first use. redis.NewScript hashes
// its source (SHA-1 of some 30 kB per script); made at package init, the
// hashing cost every start of the binary, the file backend's included
// (governor run starts it twice per run: itself and its watchdog).
type script struct {
	get func() *redis.Script
}

// newScript wraps the source src returns, built and hashed at the first Run.
func newScript(src func() string) *script {
	return &script{get: sync.OnceValue(func() *redis.Script { return redis.NewScript(src()) })}
}

// Run is redis.Script.Run: EVALSHA, and EVAL when the server does not
// have the script.
func (s *script) Run(ctx context.Context, c redis.Scripter, keys []string, args ...any) *redis.Cmd {
	return s.get().Run(ctx, c, keys, args...)
}

// runBoxed is Run with the keys also given boxed (boxed[i] holds keys[i]),
// as a resource's cached keys are (resourceKeys.boxed): go-redis's EvalSha
// boxes each key into its command's arguments at every call, an
// allocation per key (six per acquire or release). It sends what EvalSha
// sends, EVALSHA with the key count and the keys first, and falls back to
// EVAL on NOSCRIPT as Run does. args must be scalars (EvalSha would
// flatten a slice or a map).
func (s *script) runBoxed(ctx context.Context, c processor, keys []string, boxed []any, args ...any) *redis.Cmd {
	cmd := s.evalSha(ctx, boxed, args)
	_ = c.Process(ctx, cmd)
	if err := cmd.Err(); errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT") {
		return s.get().Eval(ctx, c, keys, args...)
	}
	return cmd
}

// evalSha builds the EVALSHA command of s with boxed keys and args,
// unsent.
func (s *script) evalSha(ctx context.Context, boxed, args []any) *redis.Cmd {
	a := make([]any, 0, 3+len(boxed)+len(args))
	a = append(append(append(a, "evalsha", s.Hash(), len(boxed)), boxed...), args...)
	cmd := redis.NewCmd(ctx, a...)
	if len(boxed) > 0 {
		cmd.SetFirstKeyPos(3)
	}
	return cmd
}

// processor is what runBoxed needs of a client: a redis.UniversalClient
// or a pipeline.
type processor interface {
	redis.Scripter
	Process(ctx context.Context, cmd redis.Cmder) error
}

// box returns keys as script arguments, each boxed once.
func box(keys []string) []any {
	b := make([]any, len(keys))
	for i, k := range keys {
		b[i] = k
	}
	return b
}

// Hash is redis.Script.Hash: the SHA-1 EVALSHA names the script by.
func (s *script) Hash() string { return s.get().Hash() }

// Load is redis.Script.Load: SCRIPT LOAD.
func (s *script) Load(ctx context.Context, c redis.Scripter) *redis.StringCmd {
	return s.get().Load(ctx, c)
}
