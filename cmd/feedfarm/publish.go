package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/feedmail/feedmail/internal/testkit/farm"
	"github.com/feedmail/feedmail/internal/testkit/hubtest"
)

// publishPath switches the ticker's publishing: POST ?on=1 or ?on=0; GET
// answers {"on":bool}. POST ?burst=N publishes one item in each of the
// next N feeds at once (round robin, as N ticks would): what a pause of
// the poller would have let accumulate.
const publishPath = farm.ControlPrefix + "publish"

// publisher publishes a new item at each tick while on: in the next feed
// (round robin), or in every feed with all.
type publisher struct {
	feeds []*farm.Feed
	all   bool
	log   *slog.Logger
	on    atomic.Bool
	mu    sync.Mutex // guards next
	next  int        // the feed of the next tick
	// notify, if set, tells the hub that a feed advertising it changed.
	notify func(topic string)
}

// loop publishes every d until ctx ends; with d 0 or no feeds it only
// waits for ctx.
func (p *publisher) loop(ctx context.Context, d time.Duration) {
	if d <= 0 || len(p.feeds) == 0 {
		<-ctx.Done()
		return
	}
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if p.on.Load() {
				p.tick()
			}
		}
	}
}

// tick publishes one item in the next feed, or in every feed.
func (p *publisher) tick() {
	p.mu.Lock()
	targets := p.feeds[p.next : p.next+1]
	if p.all {
		targets = p.feeds
	} else {
		p.next = (p.next + 1) % len(p.feeds)
	}
	p.mu.Unlock()
	for _, f := range targets {
		p.publish(f)
	}
	p.log.Info("published", "feeds", len(targets), "first", targets[0].URL())
}

// publish adds an item to f and tells the hub when f advertises it.
func (p *publisher) publish(f *farm.Feed) {
	f.Publish()
	if p.notify != nil && f.Spec().Hub != "" {
		p.notify(f.URL())
	}
}

// burst publishes one item in each of the next n feeds (round robin; at
// most every feed once).
func (p *publisher) burst(n int) {
	if len(p.feeds) == 0 {
		return
	}
	n = min(n, len(p.feeds))
	p.mu.Lock()
	first := p.next
	p.next = (p.next + n) % len(p.feeds)
	p.mu.Unlock()
	for i := range n {
		p.publish(p.feeds[(first+i)%len(p.feeds)])
	}
	p.log.Info("published a burst", "feeds", n)
}

// ServeHTTP answers publishPath: POST with on=1 or on=0 switches the
// publishing; any method answers the state as JSON.
func (p *publisher) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && r.URL.Query().Has("burst"):
		n, err := strconv.Atoi(r.URL.Query().Get("burst"))
		if err != nil || n < 0 {
			http.Error(w, "want burst=N, N ≥ 0", http.StatusBadRequest)
			return
		}
		p.burst(n)
	case r.Method == http.MethodPost:
		switch r.URL.Query().Get("on") {
		case "1", "true":
			p.on.Store(true)
		case "0", "false":
			p.on.Store(false)
		default:
			http.Error(w, "want on=1 or on=0", http.StatusBadRequest)
			return
		}
		p.log.Info("publishing switched", "on", p.on.Load())
	case r.Method != http.MethodGet && r.Method != http.MethodHead:
		http.Error(w, "GET or POST", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]bool{"on": p.on.Load()})
}

// hubNotifier returns the function that tells hub, on its own goroutine,
// that topic changed (hub.mode=publish), trying three times a second
// apart before it logs the failure: a publisher's ping to its hub.
func hubNotifier(ctx context.Context, hub string, log *slog.Logger) func(topic string) {
	client := &http.Client{Timeout: 10 * time.Second}
	return func(topic string) {
		go func() {
			var err error
			for try := range 3 {
				if err = hubtest.Publish(ctx, client, hub, topic); err == nil || ctx.Err() != nil {
					return
				}
				if try < 2 {
					select {
					case <-ctx.Done():
						return
					case <-time.After(time.Second):
					}
				}
			}
			log.Warn("could not notify the hub", "hub", hub, "topic", topic, "err", err)
		}()
	}
}

// openPublishLog appends the farm's publication log to path and returns
// the function that stops the log and closes the file, reporting the
// first error writing it.
func openPublishLog(fm *farm.Farm, path string) (func() error, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("-publish-log: %w", err)
	}
	fm.SetPublishLog(f)
	return func() error {
		fm.SetPublishLog(nil)
		werr := fm.PublishLogErr()
		if cerr := f.Close(); werr == nil && cerr != nil {
			werr = cerr
		}
		if werr != nil {
			return fmt.Errorf("-publish-log: %w", werr)
		}
		return nil
	}, nil
}

// printFaults writes the fault counts on w as one line of JSON, whatever
// the log level, when faults were asked for.
func printFaults(fm *farm.Farm, f farm.Faults, w io.Writer) {
	if f.Reset == 0 && f.Timeout == 0 && f.Status500 == 0 {
		return
	}
	b, _ := json.Marshal(fm.FaultCounts())
	fmt.Fprintf(w, "feedfarm: faults %s\n", b)
}
