package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/feedmail/feedmail/internal/testkit/farm"
	"github.com/feedmail/feedmail/internal/testkit/hubtest"
	"github.com/feedmail/feedmail/poller"
)

// The chaos world's WebSub side: a hub (hubtest) that HubShare of the
// feeds advertise, which the farms notify of each post and which pushes
// it to feedmail's callback, and a front that the callback URL names
// (FEEDMAIL_BASE_URL of every serve), so that the hub reaches a live
// serve while one is killed.

// DefaultChaosHubShare is the share of feeds that advertise the hub: half,
// so that the pushed and the polled lag lines rest on as many deliveries.
const DefaultChaosHubShare = 0.5

// chaosHubResend is the share of pushes the hub sends again after
// feedmail answered (the answer "lost"), so that a repeated push is met.
const chaosHubResend = 0.02

// startHub starts the hub and the callback front (when HubShare > 0) and
// has the warm start record the hubs its polls discover, as serve's
// poller does, so that the serves subscribe as they start.
func (c *chaos) startHub(ctx context.Context) error {
	if c.cfg.HubShare <= 0 {
		return nil
	}
	h, err := hubtest.Start("127.0.0.1:0", hubtest.Options{Seed: c.cfg.Seed, Resend: chaosHubResend,
		Log: c.cfg.Log.With("part", "hub")})
	if err != nil {
		return err
	}
	c.hub = h
	c.s.cleanup = append(c.s.cleanup, func() { _ = h.Close() })
	if c.front, err = startFront(); err != nil {
		return err
	}
	c.s.cleanup = append(c.s.cleanup, c.front.close)
	wsm, err := poller.NewWebSubManager(poller.WebSubConfig{Store: c.s.st, HTTP: http.DefaultClient, Log: c.cfg.Log,
		Callback: func(int64, string) string { return "" }}) // the warm start only records: no requests
	if err != nil {
		return err
	}
	c.s.warmHook = wsm.OnPoll
	return nil
}

// hubFarmArgs are farm i's flags for the hub.
func (c *chaos) hubFarmArgs() []string {
	if c.hub == nil {
		return nil
	}
	return []string{"-hub", c.hub.URL(), "-hub-share", fmt.Sprint(c.cfg.HubShare)}
}

// markPushed records which feeds advertise the hub: feed i is the
// (i / Hosts)-th of its farm (steady.startFarms), and each farm picks its
// own by farm.HubAdvertised.
func (c *chaos) markPushed() {
	c.pushed = map[string]bool{}
	if c.hub == nil {
		return
	}
	for i, u := range c.s.urls {
		if farm.HubAdvertised(i/c.cfg.Hosts, c.cfg.HubShare) {
			c.pushed[u] = true
		}
	}
}

// waitSubscribed waits, at most 3 min, until every pushed feed's
// subscription is verified (feeds.websub_state 'active'); short of that
// the report says how many were.
func (c *chaos) waitSubscribed(ctx context.Context) error {
	c.markPushed()
	if c.hub == nil {
		return nil
	}
	want := int64(len(c.pushed))
	deadline := time.Now().Add(3 * time.Minute)
	var n int64
	for {
		err := c.s.st.DB.WithContext(ctx).Raw(`SELECT count(*) FROM feeds WHERE websub_state = 'active'`).Scan(&n).Error
		if err != nil {
			return fmt.Errorf("count the WebSub subscriptions: %w", err)
		}
		c.cfg.Progress(fmt.Sprintf("WebSub: %d of %d subscriptions verified", n, want))
		if n >= want || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	c.notes = append(c.notes, fmt.Sprintf("WebSub: %d feeds advertise the hub (share %.2f); %d subscriptions verified before the window", want, c.cfg.HubShare, n))
	return nil
}

// front is the callback URL's host: it forwards each request to the next
// serve (round robin) and, when that serve cannot be connected to (killed),
// to the one after; a serve that fails mid-request answers 502, and the
// hub retries.
type front struct {
	srv    *http.Server
	addr   string
	client *http.Client

	mu       sync.Mutex
	backends []string
	next     int

	forwarded, failedOver, failed atomic.Int64
}

// startFront listens on a loopback port; backends are set later.
func startFront() (*front, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("callback front: %w", err)
	}
	f := &front{addr: ln.Addr().String(), client: &http.Client{Timeout: time.Minute,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	f.srv = &http.Server{Handler: f, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = f.srv.Serve(ln) }()
	return f, nil
}

func (f *front) close() { _ = f.srv.Close() }

// setBackends names the serves' addresses.
func (f *front) setBackends(addrs []string) {
	f.mu.Lock()
	f.backends = append([]string(nil), addrs...)
	f.mu.Unlock()
}

// order is the backends to try for one request, starting at the next.
func (f *front) order() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(f.backends)
	out := make([]string, 0, n)
	for i := range n {
		out = append(out, f.backends[(f.next+i)%n])
	}
	f.next++
	return out
}

// ServeHTTP forwards r to the first serve that takes the connection.
func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 11<<20))
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	for _, b := range f.order() {
		req, err := http.NewRequestWithContext(r.Context(), r.Method, "http://"+b+r.URL.RequestURI(), bytes.NewReader(body))
		if err != nil {
			break
		}
		req.Header = r.Header.Clone()
		resp, err := f.client.Do(req)
		var op *net.OpError
		if err != nil && errors.As(err, &op) && op.Op == "dial" {
			f.failedOver.Add(1)
			continue
		}
		if err != nil {
			break
		}
		for k, vs := range resp.Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
		resp.Body.Close()
		f.forwarded.Add(1)
		return
	}
	f.failed.Add(1)
	http.Error(w, "no serve answered", http.StatusBadGateway)
}
