// Package gateway is `etcd gateway start`: a TCP proxy in front of a cluster's client
// endpoints, as upstream's (no TLS of its own, no protocol awareness). Each connection goes to
// an endpoint picked at random among those not known to be down; an endpoint that refuses a
// connection is left out until a retry, one interval later, reaches it again.
package gateway

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"sync"
	"time"
)

// Proxy forwards every connection accepted on its listener to one of its endpoints.
type Proxy struct {
	Listener  net.Listener
	Endpoints []string // host:port
	// RetryDelay is how long an endpoint that failed stays out before it is tried again.
	RetryDelay time.Duration
	Log        *slog.Logger
	// DialTimeout bounds each dial to an endpoint (0: 5 s).
	DialTimeout time.Duration

	mu       sync.Mutex
	inactive map[string]time.Time // endpoint -> when it went out
	rand     *rand.Rand
}

// Run serves until the listener closes or ctx ends; it returns nil then.
func (p *Proxy) Run(ctx context.Context) error {
	p.inactive = map[string]time.Time{}
	p.rand = rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0))
	if p.DialTimeout == 0 {
		p.DialTimeout = 5 * time.Second
	}
	p.Log.Info("ready to proxy client requests", "endpoints", p.Endpoints)
	go func() {
		<-ctx.Done()
		p.Listener.Close()
	}()
	go p.retryLoop(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		in, err := p.Listener.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.serve(ctx, in)
		}()
	}
}

// candidates is the endpoints to try for a new connection, in the order to try them: the
// active ones shuffled.
func (p *Proxy) candidates() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, ep := range p.Endpoints {
		if _, down := p.inactive[ep]; !down {
			out = append(out, ep)
		}
	}
	p.rand.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

func (p *Proxy) deactivate(ep string, err error) {
	p.mu.Lock()
	p.inactive[ep] = time.Now()
	p.mu.Unlock()
	p.Log.Warn("deactivated endpoint", "address", ep, "interval", p.RetryDelay.String(), "error", err.Error())
}

// serve connects in to the first endpoint that answers and copies both ways until either side
// closes; with none answering, in is closed.
func (p *Proxy) serve(ctx context.Context, in net.Conn) {
	defer in.Close()
	var out net.Conn
	for _, ep := range p.candidates() {
		d := net.Dialer{Timeout: p.DialTimeout}
		c, err := d.DialContext(ctx, "tcp", ep)
		if err != nil {
			p.deactivate(ep, err)
			continue
		}
		out = c
		break
	}
	if out == nil {
		return
	}
	defer out.Close()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		io.Copy(dst, src)
		// Half-close so the other direction can finish what it was sending.
		if tc, ok := dst.(interface{ CloseWrite() error }); ok {
			tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(out, in)
	go pipe(in, out)
	select {
	case <-done:
		// one side finished; give the other a moment to drain, as the connection is closing
		select {
		case <-done:
		case <-time.After(time.Second):
		}
	case <-ctx.Done():
	}
}

// retryLoop brings back, every RetryDelay, the endpoints that accept a connection again.
func (p *Proxy) retryLoop(ctx context.Context) {
	t := time.NewTicker(p.RetryDelay)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		p.mu.Lock()
		var down []string
		for ep := range p.inactive {
			down = append(down, ep)
		}
		p.mu.Unlock()
		for _, ep := range down {
			c, err := net.DialTimeout("tcp", ep, p.DialTimeout)
			if err != nil {
				p.Log.Warn("failed to activate endpoint (stay inactive for another interval)", "address", ep, "interval", p.RetryDelay.String(), "error", err.Error())
				continue
			}
			c.Close()
			p.mu.Lock()
			delete(p.inactive, ep)
			p.mu.Unlock()
			p.Log.Info("activated", "address", ep)
		}
	}
}
