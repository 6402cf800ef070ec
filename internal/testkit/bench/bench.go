// Package bench runs feedmail's benchmark scenarios in one process, against
// the database an operator configured, a feed farm and an SMTP sink on
// loopback, and reports numbers a person can compare across machines. It is
// what cmd/feedbench runs; tests run the same scenarios small.
//
// # Scenarios
//
//   - cold: one poll pass over Feeds feeds seen for the first time (Items
//     items each): fetch, parse, record every item as seen, write each
//     feed's state.
//   - warm: one pass over the same feeds, all answering 304.
//   - changed: one pass where every tenth feed has published one new item:
//     304s, 200s parsed, the new items recorded and one instant email queued
//     per new item (each fleet feed has one instant subscriber).
//   - fanout: one new item of one feed with Subscribers instant subscribers,
//     polled and committed (the item and Subscribers outbox rows in one
//     transaction).
//   - outbox: every queued email claimed, rendered, charged, sent over SMTP
//     to the sink and marked sent.
//   - digest: Digests digests, each with 20 items from 8 feeds waiting, due
//     at once: assembled into issues, priced and queued.
//   - import (only when named): one person imports an OPML list of Feeds
//     new feeds spread over the hosts, through the use case `feedmail
//     import-opml` runs: each feed checked, baselined and subscribed.
//   - import-readers (only when named): Readers people's OPML files (2
//     feeds each of Feeds) imported as `feedmail import-readers
//     --confirmed` does, against a bare loop of multi-row INSERTs.
//   - import-readers-api (only when named): the same people as NDJSON
//     through the API's bulk import, over HTTP to serve's web handler,
//     against the same bare loop.
//
// Each scenario's row compares feedmail with a bare loop doing the same
// network work where one makes sense (the poll scenarios, the outbox), and
// reports database round trips and peak RSS of the timed part only. The
// bench works in a fresh Postgres schema or SQLite file and runs the
// store, poller, farm and mailer on one fake clock.
//
// Test infrastructure: never linked into cmd/feedmail. It never works in an
// existing schema's tables.
package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Scenario names, in the order they run.
const (
	Cold    = "cold"
	Warm    = "warm"
	Changed = "changed"
	FanOut  = "fanout"
	Outbox  = "outbox"
	Digest  = "digest"
	Import  = "import"
	// ImportReaders is many people's OPML files imported at once (only
	// when named; importreaders.go).
	ImportReaders = "import-readers"
	// ImportReadersAPI is the same people sent through the API's bulk
	// import (only when named; importreaders_api.go).
	ImportReadersAPI = "import-readers-api"
)

// All lists the scenarios a run without a list runs, in running order.
func All() []string { return []string{Cold, Warm, Changed, FanOut, Outbox, Digest} }

// Known lists every scenario in running order: All and the ones run only
// when named (import, whose list of thousands of new feeds would make the
// default run much longer, import-readers and import-readers-api).
func Known() []string { return append(All(), Import, ImportReaders, ImportReadersAPI) }

// Run runs cfg's scenarios and returns the report. A scenario that fails
// its checks ends the run with an error (the rows so far come back too).
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	start := time.Now()
	e, err := newEnv(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer e.close()
	rep := &Report{
		Machine: machine(e.dbDesc), Feeds: cfg.Feeds, Items: cfg.Items, Subs: cfg.Subscribers,
		Digests: cfg.Digests, Hosts: len(e.farms), Workers: Concurrency,
	}
	if cfg.Keep {
		rep.Where = e.keptDesc()
	}
	run := map[string]func(context.Context) (Row, error){
		Cold: e.cold, Warm: e.warm, Changed: e.changed, FanOut: e.fanout, Outbox: e.outbox, Digest: e.digest,
		Import: e.importOPML, ImportReaders: e.importReaders, ImportReadersAPI: e.importReadersAPI,
	}
	for _, name := range Known() {
		if !slices.Contains(cfg.Scenarios, name) {
			continue
		}
		cfg.Log.Info("bench: scenario", "name", name)
		e.scenario = name
		row, err := run[name](ctx)
		cfg.Progress("")
		if err != nil {
			rep.Machine.LoadAvgEnd = loadAvg()
			rep.Duration = time.Since(start).Round(time.Millisecond).String()
			return rep, fmt.Errorf("bench %s: %w", name, err)
		}
		row.Scenario = name
		row.derive()
		rep.Rows = append(rep.Rows, row)
	}
	rep.Machine.LoadAvgEnd = loadAvg()
	rep.Duration = time.Since(start).Round(time.Millisecond).String()
	return rep, nil
}

// derive fills the row's rates, ratio to its baseline and trips per unit
// from the counts and times its scenario measured.
func (row *Row) derive() {
	if row.Elapsed > 0 {
		row.Rate = float64(row.Count) / row.Elapsed.Seconds()
	}
	if row.Baseline != nil && row.Baseline.Elapsed > 0 {
		row.Baseline.Rate = float64(row.Count) / row.Baseline.Elapsed.Seconds()
		if row.Baseline.Rate > 0 {
			row.Ratio = row.Rate / row.Baseline.Rate
		}
	}
	if row.TripUnit == "" {
		row.TripUnit = strings.TrimSuffix(row.Unit, "s")
	}
	if row.tripCount == 0 {
		row.tripCount = row.Count
	}
	if row.tripCount > 0 {
		row.TripsPer = float64(row.Trips) / float64(row.tripCount)
	}
}
