package redistest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a running Redis Cluster of masters without replicas.
type Cluster struct {
	Nodes []*Server
}

// Addrs returns the nodes' addresses.
func (c *Cluster) Addrs() []string {
	var out []string
	for _, s := range c.Nodes {
		out = append(out, s.Addr)
	}
	return out
}

// StartCluster starts n cluster-enabled servers for t, splits the 16384
// hash slots between them, joins them and waits until every node reports
// the cluster ok. They are stopped at t's cleanup. It skips or fails as
// Start does when redis-server is missing.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	c := &Cluster{}
	for i := 0; i < n; i++ {
		dir := t.TempDir()
		s := Start(t, "--cluster-enabled", "yes", "--cluster-config-file", dir+"/nodes.conf",
			"--cluster-node-timeout", "5000")
		c.Nodes = append(c.Nodes, s)
	}
	if err := c.form(); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *Cluster) form() error {
	ctx := context.Background()
	clients := make([]*redis.Client, len(c.Nodes))
	for i, s := range c.Nodes {
		clients[i] = redis.NewClient(&redis.Options{Addr: s.Addr})
		defer clients[i].Close()
	}
	per := 16384 / len(c.Nodes)
	for i, rc := range clients {
		lo, hi := i*per, (i+1)*per-1
		if i == len(clients)-1 {
			hi = 16383
		}
		if err := rc.ClusterAddSlotsRange(ctx, lo, hi).Err(); err != nil {
			return fmt.Errorf("cluster addslotsrange on %s: %w", c.Nodes[i].Addr, err)
		}
	}
	for i := 1; i < len(c.Nodes); i++ {
		if err := clients[0].ClusterMeet(ctx, "127.0.0.1", strconv.Itoa(c.Nodes[i].Port)).Err(); err != nil {
			return fmt.Errorf("cluster meet %s: %w", c.Nodes[i].Addr, err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok := true
		for _, rc := range clients {
			info, err := rc.ClusterInfo(ctx).Result()
			if err != nil || !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, fmt.Sprintf("cluster_known_nodes:%d", len(c.Nodes))) {
				ok = false
				break
			}
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the cluster of %d nodes did not reach cluster_state:ok in 30s", len(c.Nodes))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
