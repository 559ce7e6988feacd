// Package faults holds governor's fault tests: a holder paused past its
// TTL, a partition between a holder and Redis, a Redis restart that loses
// every key, a slow Redis, many waiters under random SIGKILLs, a server
// clock far from the client's, bad input and a least-privilege ACL user.
// The package itself is only the TCP proxy the tests put between clients
// and a real redis-server.
package faults

import (
	"net"
	"sync"
	"time"
)

// Proxy forwards TCP connections from a local listener to one target
// address, and injects faults into every connection it carries: added
// latency, a blackhole (half-open connections that stop forwarding), and
// cuts. It is safe for concurrent use.
type Proxy struct {
	target string
	ln     net.Listener

	mu     sync.Mutex
	delay  time.Duration
	holed  bool
	healed chan struct{} // closed when the blackhole ends
	conns  map[*link]struct{}
	closed bool
	wg     sync.WaitGroup
}

// link is one proxied connection: the client's side and the target's.
type link struct {
	client, server net.Conn
	once           sync.Once
	dead           chan struct{} // closed by close
}

func (l *link) close() {
	l.once.Do(func() {
		l.client.Close()
		l.server.Close()
		close(l.dead)
	})
}

// NewProxy listens on a free 127.0.0.1 port and forwards every connection
// to target. Close stops it.
func NewProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	healed := make(chan struct{})
	close(healed)
	p := &Proxy{target: target, ln: ln, healed: healed, conns: map[*link]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the address clients connect to, host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetDelay adds d of latency to every chunk of data, in each direction,
// from now on (0 removes it). Data already in flight keeps the delay it
// was given; order is always kept.
func (p *Proxy) SetDelay(d time.Duration) {
	p.mu.Lock()
	p.delay = d
	p.mu.Unlock()
}

// Blackhole stops forwarding in both directions while keeping every
// connection open, as a partition does to established TCP connections:
// writes succeed, nothing arrives, nothing fails. New connections are
// accepted and stalled too. Data sent meanwhile is held and delivered
// after Heal on connections still open — as TCP retransmission would
// once the partition ends — so late requests do reach the server.
func (p *Proxy) Blackhole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.holed {
		p.holed = true
		p.healed = make(chan struct{})
	}
}

// Heal ends a blackhole and removes the delay.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay = 0
	if p.holed {
		p.holed = false
		close(p.healed)
	}
}

// Cut closes every open connection (both sides), as a server or a
// middlebox resetting them would. New connections are accepted as usual.
func (p *Proxy) Cut() {
	p.mu.Lock()
	ls := make([]*link, 0, len(p.conns))
	for l := range p.conns {
		ls = append(ls, l)
	}
	p.mu.Unlock()
	for _, l := range ls {
		l.close()
	}
}

// Conns returns the number of open connections.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// Close stops listening, closes every connection and waits for the
// proxy's goroutines to end.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	if p.holed {
		p.holed = false
		close(p.healed)
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.Cut()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.DialTimeout("tcp", p.target, 5*time.Second)
		if err != nil {
			c.Close() // the target is down: the client sees a reset
			continue
		}
		l := &link{client: c, server: s, dead: make(chan struct{})}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			l.close()
			return
		}
		p.conns[l] = struct{}{}
		p.wg.Add(4)
		p.mu.Unlock()
		go p.pipe(l, c, s)
		go p.pipe(l, s, c)
	}
}

// chunk is data read at one instant, due for delivery at due.
type chunk struct {
	b   []byte
	due time.Time
}

// pipe forwards src to dst through a queue, so that a delay adds latency
// without limiting throughput. The reader stamps each chunk with its due
// time; the writer waits for it, and for the end of any blackhole.
func (p *Proxy) pipe(l *link, src, dst net.Conn) {
	q := make(chan chunk, 1024)
	go func() {
		defer p.wg.Done()
		defer close(q)
		for {
			buf := make([]byte, 32*1024)
			n, err := src.Read(buf)
			if n > 0 {
				p.mu.Lock()
				d := p.delay
				p.mu.Unlock()
				q <- chunk{b: buf[:n], due: time.Now().Add(d)}
			}
			if err != nil {
				return
			}
		}
	}()
	defer p.wg.Done()
	defer func() {
		l.close()
		p.mu.Lock()
		delete(p.conns, l)
		p.mu.Unlock()
		for range q { // let the reader finish
		}
	}()
	for c := range q {
		if wait := time.Until(c.due); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-l.dead:
				t.Stop()
				return
			}
		}
		for {
			p.mu.Lock()
			healed, holed := p.healed, p.holed
			p.mu.Unlock()
			if !holed {
				break
			}
			select {
			case <-healed:
			case <-l.dead:
				return
			}
		}
		if _, err := dst.Write(c.b); err != nil {
			return
		}
	}
}
