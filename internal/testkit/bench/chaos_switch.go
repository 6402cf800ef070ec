package bench

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/feedmail/feedmail/internal/testkit/hooksink"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
)

// forwarder is a TCP relay serve's SMTP client connects to: each new
// connection goes to the faulty sink while faults are on, to the clean one
// after, so the faults stop at the window's end without restarting serve.
type forwarder struct {
	ln     net.Listener
	to     [2]string // faulty, clean
	clean  atomic.Bool
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]bool
	closed bool
}

// startForwarder listens on a loopback port and relays to faulty (or,
// after calm, to clean).
func startForwarder(faulty, clean string) (*forwarder, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("forwarder: %w", err)
	}
	f := &forwarder{ln: ln, to: [2]string{faulty, clean}, conns: map[net.Conn]bool{}}
	f.wg.Add(1)
	go f.accept()
	return f, nil
}

// Addr is the address serve connects to.
func (f *forwarder) Addr() string { return f.ln.Addr().String() }

// calm sends new connections to the clean sink from now on.
func (f *forwarder) calm() { f.clean.Store(true) }

func (f *forwarder) accept() {
	defer f.wg.Done()
	for {
		in, err := f.ln.Accept()
		if err != nil {
			return
		}
		to := f.to[0]
		if f.clean.Load() {
			to = f.to[1]
		}
		out, err := net.DialTimeout("tcp", to, 10*time.Second)
		if err != nil {
			_ = in.Close()
			continue
		}
		if !f.track(in, out) {
			return
		}
		f.wg.Add(2)
		go f.pipe(out, in)
		go f.pipe(in, out)
	}
}

// track remembers a pair of connections for Close; false once closed.
func (f *forwarder) track(cs ...net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		for _, c := range cs {
			_ = c.Close()
		}
		return false
	}
	for _, c := range cs {
		f.conns[c] = true
	}
	return true
}

// pipe copies src to dst, then closes both (a hang-up on one side is a
// hang-up on the other, as the client must see the sink's drop).
func (f *forwarder) pipe(dst, src net.Conn) {
	defer f.wg.Done()
	_, _ = io.Copy(dst, src)
	_ = dst.Close()
	_ = src.Close()
	f.mu.Lock()
	delete(f.conns, dst)
	delete(f.conns, src)
	f.mu.Unlock()
}

// Close stops listening and cuts every relayed connection.
func (f *forwarder) Close() error {
	err := f.ln.Close()
	f.mu.Lock()
	f.closed = true
	for c := range f.conns {
		_ = c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
	return err
}

// hookSwitch is the webhook receivers' front: a reverse proxy to the
// faulty receiver while faults are on, to the clean one after. A 2xx it
// could not hand back because serve hung up (killed) marks that reception
// as a reply lost, as the receivers do when serve is gone before their 2xx.
type hookSwitch struct {
	srv    *http.Server
	ln     net.Listener
	back   [2]*hooksink.Server
	clean  atomic.Bool
	hungUp atomic.Int64 // 2xx answers whose client was gone
}

// startHookSwitch starts both receivers (recording into rec) and the proxy.
func startHookSwitch(seed int64, rec *recorder) (*hookSwitch, error) {
	faulty, clean, err := startHookBackends(seed, rec)
	if err != nil {
		return nil, err
	}
	h := &hookSwitch{back: [2]*hooksink.Server{faulty, clean}}
	targets := [2]*url.URL{}
	for i, b := range h.back {
		if targets[i], err = url.Parse(b.URL()); err != nil {
			return nil, err
		}
	}
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		t := targets[0]
		if h.clean.Load() {
			t = targets[1]
		}
		r.SetURL(t)
		r.Out.URL.Path = r.In.URL.Path
		r.Out.Host = r.In.Host
	}, ErrorLog: log.New(io.Discard, "", 0)} // a hook feedmail gave up on is not news
	if h.ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return nil, err
	}
	front := func(w http.ResponseWriter, r *http.Request) {
		sw := &testutil.StatusWriter{ResponseWriter: w}
		rp.ServeHTTP(sw, r)
		if sw.Code()/100 == 2 && r.Context().Err() != nil {
			h.hungUp.Add(1)
			rec.hookReplyLost(r.Header.Get("webhook-id"), r.URL.Path)
		}
	}
	h.srv = &http.Server{Handler: http.HandlerFunc(front), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = h.srv.Serve(h.ln) }()
	return h, nil
}

// URL is the base URL webhook subscriptions point at.
func (h *hookSwitch) URL() string { return "http://" + h.ln.Addr().String() }

// calm sends new requests to the clean receiver from now on.
func (h *hookSwitch) calm() { h.clean.Store(true) }

// repliesLost counts the hooks taken whose sender never got the 2xx: at
// either receiver or at the front.
func (h *hookSwitch) repliesLost() int64 {
	return h.back[0].Counts().ClientGone + h.back[1].Counts().ClientGone + h.hungUp.Load()
}

func (h *hookSwitch) close() {
	_ = h.srv.Close()
	for _, b := range h.back {
		_ = b.Close()
	}
}
