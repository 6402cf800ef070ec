// Command feedfarm runs a fake feed host by hand, for trying the poller
// against thousands of feeds without bothering anyone's real server:
//
//	go run ./cmd/feedfarm -listen 127.0.0.1:8090 -feeds 100 -publish-every 30s
//
// It prints the URL of every feed on stdout, one a line, and serves an OPML
// of them all at /opml (ready for `feedmail import-opml`), an index at /,
// a site page with autodiscovery links at /s/1, and at /_stats/intervals
// a histogram (JSON) of the time between successive requests for the
// same feed: the polling interval as a publisher sees it. Every -publish-every, a
// new item appears in the next feed (round robin), or in every feed with
// -publish-all. Logs go to stderr. It stops on SIGINT or SIGTERM.
//
// The feeds differ the way real ones do: formats rotate through -formats,
// and with -validators mix they rotate through strong ETag + Last-Modified,
// weak ETag, Last-Modified only, and no validators at all.
//
// For long benchmarks, -record=false keeps no record of requests (memory
// stays flat) and -log-level warn leaves out the line logged per publish.
//
// For fault runs, -fault-reset, -fault-timeout and -fault-500 give the
// share of feed requests that get a TCP reset, a hang until the client
// gives up (at most two minutes), or a 500, drawn from -fault-seed; the
// counts are served at /_farm/faults (JSON) and printed on stderr at exit.
// -publish-log FILE appends one JSON line per item published by the
// ticker ({"feed","guid","link","title","published","at"}, times in
// RFC 3339 with nanoseconds), written as soon as the feed serves it.
// -publish-paused starts with the ticker's publishing off; POST
// /_farm/publish?on=1 turns it on (on=0 off), GET tells {"on":bool};
// POST /_farm/publish?burst=N publishes one item in each of the next N
// feeds at once (what a paused poller would find):
//
//	go run ./cmd/feedfarm -feeds 2000 -publish-every 1s -publish-paused \
//	    -publish-log /tmp/published.jsonl -fault-reset 0.01 -fault-timeout 0.01 -fault-500 0.01
//	curl -X POST 'http://127.0.0.1:8090/_farm/publish?on=1'
//
// It is a tool, not part of the product: it must not fetch anything (it only
// serves the feeds it makes up), and cmd/feedmail must not import it.
package main

import (
	"context"
	"errors"
	"expvar"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/testkit/farm"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "feedfarm:", err)
		}
		os.Exit(2)
	}
}

type options struct {
	listen        string
	feeds         int
	items         int
	publishEvery  time.Duration
	publishAll    bool
	publishPaused bool
	publishLog    string
	formats       []farm.Format
	validators    string
	cacheControl  string
	gzip          bool
	hub           string
	hubShare      float64
	record        bool
	logLevel      slog.Level
	pprof         string
	faults        farm.Faults
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("feedfarm", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.listen, "listen", "127.0.0.1:8090", "address to listen on")
	fs.IntVar(&o.feeds, "feeds", 100, "number of feeds")
	fs.IntVar(&o.items, "items", 10, "initial items per feed (one a day back from now)")
	fs.DurationVar(&o.publishEvery, "publish-every", 30*time.Second, "publish a new item this often (0: never)")
	fs.BoolVar(&o.publishAll, "publish-all", false, "publish in every feed at each tick instead of the next one")
	fs.BoolVar(&o.publishPaused, "publish-paused", false, "start with publishing off (POST /_farm/publish?on=1 turns it on)")
	fs.StringVar(&o.publishLog, "publish-log", "", "append one JSON line per published item to this file")
	formats := fs.String("formats", "rss,atom,json", "formats to rotate through: rss, atom, json")
	fs.StringVar(&o.validators, "validators", "mix", "validators: mix, both, etag, weak, lm, none")
	fs.StringVar(&o.cacheControl, "cache-control", "", "Cache-Control header of every feed")
	fs.BoolVar(&o.gzip, "gzip", true, "gzip feeds for clients that accept it")
	fs.StringVar(&o.hub, "hub", "", "WebSub hub URL to advertise (and to notify of each new item: hub.mode=publish)")
	fs.Float64Var(&o.hubShare, "hub-share", 1, "share of the feeds that advertise -hub, spread evenly (0-1)")
	fs.BoolVar(&o.record, "record", true, "keep a record of every request (false: memory stays flat)")
	fs.StringVar(&o.pprof, "pprof", "", "serve net/http/pprof and expvar on this address (\"\": off)")
	fs.Float64Var(&o.faults.Reset, "fault-reset", 0, "share of feed requests answered with a TCP reset")
	fs.Float64Var(&o.faults.Timeout, "fault-timeout", 0, "share of feed requests left hanging until the client gives up (at most 2m)")
	fs.Float64Var(&o.faults.Status500, "fault-500", 0, "share of feed requests answered 500")
	fs.Int64Var(&o.faults.Seed, "fault-seed", 1, "seed of the fault decisions")
	level := fs.String("log-level", "info", "log level: debug, info, warn, error")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: feedfarm [flags]\n\nRuns a fake feed host; prints the feed URLs; serves /opml.\n"+
			"Fault counts: GET /_farm/faults. Publishing on/off: POST /_farm/publish?on=1 (or 0); a burst in N feeds: ?burst=N.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if err := o.logLevel.UnmarshalText([]byte(*level)); err != nil {
		return o, fmt.Errorf("-log-level: %w", err)
	}
	return o, o.check(*formats)
}

// check validates the options and reads the -formats list into o.
func (o *options) check(formats string) error {
	if o.feeds < 0 || o.items < 0 || o.publishEvery < 0 {
		return errors.New("-feeds, -items and -publish-every must not be negative")
	}
	if o.hubShare < 0 || o.hubShare > 1 {
		return errors.New("-hub-share must be between 0 and 1")
	}
	for name := range strings.SplitSeq(formats, ",") {
		switch strings.TrimSpace(name) {
		case "rss":
			o.formats = append(o.formats, farm.RSS)
		case "atom":
			o.formats = append(o.formats, farm.Atom)
		case "json":
			o.formats = append(o.formats, farm.JSONFeed)
		default:
			return fmt.Errorf("-formats: unknown format %q (want rss, atom, json)", name)
		}
	}
	switch o.validators {
	case "mix", "both", "etag", "weak", "lm", "none":
	default:
		return fmt.Errorf("-validators: unknown value %q (want mix, both, etag, weak, lm, none)", o.validators)
	}
	return nil
}

// validatorSpecs are the -validators modes; mix rotates through all four.
var validatorSpecs = map[string]func(s *farm.Spec){
	"both": func(s *farm.Spec) { s.ETag, s.LastModified = farm.ETagStrong, true },
	"etag": func(s *farm.Spec) { s.ETag = farm.ETagStrong },
	"weak": func(s *farm.Spec) { s.ETag = farm.ETagWeak },
	"lm":   func(s *farm.Spec) { s.LastModified = true },
	"none": func(*farm.Spec) {},
}

var mix = []string{"both", "weak", "lm", "none"}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: o.logLevel}))
	fm, err := farm.Listen(clock.Real{}, o.listen)
	if err != nil {
		return err
	}
	defer fm.Close()
	fm.SetRecording(o.record)
	if err := fm.SetFaults(o.faults); err != nil {
		return fmt.Errorf("-fault-*: %w", err)
	}
	defer printFaults(fm, o.faults, stderr)
	if o.publishLog != "" {
		closeLog, err := openPublishLog(fm, o.publishLog)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, closeLog()) }()
	}
	if o.pprof != "" {
		stopPprof, err := servePprof(o.pprof)
		if err != nil {
			return err
		}
		defer stopPprof()
	}
	feeds, site, err := addFeeds(fm, o, stdout)
	if err != nil {
		return err
	}
	pub := &publisher{feeds: feeds, all: o.publishAll, log: log}
	if o.hub != "" {
		pub.notify = hubNotifier(ctx, o.hub, log)
	}
	pub.on.Store(!o.publishPaused)
	fm.HandleControl(publishPath, pub)
	log.Info("feed farm running", "url", fm.URL(), "feeds", len(feeds), "opml", fm.URL()+"/opml",
		"site", site, "publish_every", o.publishEvery, "publishing", pub.on.Load(), "faults", fmt.Sprintf("%+v", o.faults))
	pub.loop(ctx, o.publishEvery)
	log.Info("stopping", "requests", len(fm.Requests()))
	return nil
}

// addFeeds adds the feeds o asks for, prints their URLs on stdout, and
// adds a site page for the first three; it returns the feeds and the
// site's URL.
func addFeeds(fm *farm.Farm, o options, stdout io.Writer) ([]*farm.Feed, string, error) {
	feeds := make([]*farm.Feed, o.feeds)
	for i := range feeds {
		spec := farm.Spec{
			Format:       o.formats[i%len(o.formats)],
			ItemCount:    o.items,
			CacheControl: o.cacheControl,
			Gzip:         o.gzip,
		}
		if farm.HubAdvertised(i, o.hubShare) {
			spec.Hub = o.hub
		}
		mode := o.validators
		if mode == "mix" {
			mode = mix[i%len(mix)]
		}
		validatorSpecs[mode](&spec)
		feeds[i] = fm.AddFeed(spec)
		if _, err := fmt.Fprintln(stdout, feeds[i].URL()); err != nil {
			return nil, "", err
		}
	}
	site := ""
	if len(feeds) > 0 {
		site = fm.AddSite(feeds[:min(3, len(feeds))]...)
	}
	return feeds, site, nil
}

// servePprof serves the profiles and expvar (memstats) on addr, apart from
// the farm's listener, and returns the function that stops it.
func servePprof(addr string) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("-pprof: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.Handle("/debug/vars", expvar.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return func() { _ = srv.Close() }, nil
}
