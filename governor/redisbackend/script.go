package redisbackend

import (
	"context"
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

// Hash is redis.Script.Hash: the SHA-1 EVALSHA names the script by.
func (s *script) Hash() string { return s.get().Hash() }

// Load is redis.Script.Load: SCRIPT LOAD.
func (s *script) Load(ctx context.Context, c redis.Scripter) *redis.StringCmd {
	return s.get().Load(ctx, c)
}
