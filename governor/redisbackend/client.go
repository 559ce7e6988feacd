package redisbackend

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// NewClient returns a client for a Redis URL:
//
//	redis://[user:password@]host[:port][/db]   one server (rediss:// for TLS,
//	unix://[user:password@]/path/to/socket     or its unix socket)
//	redis+cluster://host:port[?addr=host:port…] a Redis Cluster: the seeds
//	redis+sentinel://host:port[/db]?master_name=NAME[&addr=host:port…]
//	                                           the master the sentinels name
//
// with rediss+cluster and rediss+sentinel for TLS, and go-redis's query
// options (dial_timeout=3s, …). Every call it makes honours its context's
// deadline (ContextTimeoutEnabled): a renewal stuck on a partition must
// not outlive its lease's local deadline.
func NewClient(rawURL string) (redis.UniversalClient, error) {
	c, err := newClient(rawURL)
	return c, hidePasswords(err)
}

// userPassword is user:password@ anywhere in a text, compiled at its
// first use (a parse error): every start of the binary, the file
// backend's and the watchdog's included, would compile it at init.
var userPassword = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`([^\s:/@?&=]*):[^\s@/]+@`) })

// hidePasswords returns err with every user:password@ in its text shown
// as user:***@: go-redis's parse errors quote the URL, or the part that
// did not parse (?addr=u:PW@…), whole.
func hidePasswords(err error) error {
	if err == nil || !userPassword().MatchString(err.Error()) {
		return err
	}
	return errors.New(userPassword().ReplaceAllString(err.Error(), "$1:***@"))
}

func newClient(rawURL string) (redis.UniversalClient, error) {
	scheme, rest, _ := strings.Cut(rawURL, "://")
	base, topology, _ := strings.Cut(scheme, "+")
	plain := base + "://" + rest
	switch topology {
	case "":
		opt, err := redis.ParseURL(rawURL)
		if err != nil {
			return nil, err
		}
		opt.ContextTimeoutEnabled = true
		return redis.NewClient(opt), nil
	case "cluster":
		opt, err := redis.ParseClusterURL(plain)
		if err != nil {
			return nil, err
		}
		opt.ContextTimeoutEnabled = true
		return redis.NewClusterClient(opt), nil
	case "sentinel":
		opt, err := redis.ParseFailoverURL(plain)
		if err != nil {
			return nil, err
		}
		if opt.MasterName == "" {
			return nil, fmt.Errorf("redis: a sentinel URL needs ?master_name=NAME")
		}
		opt.ContextTimeoutEnabled = true
		return redis.NewFailoverClient(opt), nil
	}
	return nil, fmt.Errorf("redis: scheme %q: want redis, rediss, unix, redis+cluster or redis+sentinel", scheme)
}
