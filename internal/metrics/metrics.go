// Package metrics defines the Prometheus metrics an operator reads to see the
// system: polls, items, queues, emails, digests, credits. One *Metrics is made
// per process (no global registry) and handed to each worker. It only
// records and exposes numbers; it must not decide anything.
package metrics

import (
	"context"
	"database/sql"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics holds every collector. A nil *Metrics is valid and records nothing,
// so tests and tools need not make one.
type Metrics struct {
	Registry *prometheus.Registry

	Polls               *prometheus.CounterVec // outcome, status
	PollSeconds         prometheus.Histogram   // time to full response
	Items               *prometheus.CounterVec // result (new, ignored), rule
	Emails              *prometheus.CounterVec // kind, result (sent, retry, failed, held)
	DigestsSent         prometheus.Counter     // digest issues queued
	CreditsCharged      prometheus.Counter     // credits taken by sent mail
	WebSub              *prometheus.CounterVec // event
	ESPNotices          *prometheus.CounterVec // provider, outcome
	HTTPRequests        *prometheus.CounterVec // route, code
	QueueDepth          *prometheus.GaugeVec   // queue (due_feeds, outbox, held)
	FeedRecovery        *prometheus.GaugeVec   // state (ailing, frozen, dead, moved, offered, accepted)
	Inbound             *prometheus.CounterVec // kind, severity
	SenderFailures      *prometheus.CounterVec // reason: emails refused for the sender's own sake
	PollLag             prometheus.Histogram   // how late a due poll started against its next_poll_at
	DBStatements        prometheus.Counter     // SQL statements and BEGIN/COMMIT/ROLLBACK sent
	TakenOver           *prometheus.CounterVec // kind: leased work taken over from a holder whose lease ran out
	OutboxLeaseRenewals *prometheus.CounterVec // result: renewed, failed (an outbox pass keeping its rows)
	DatabaseWait        *prometheus.CounterVec // role: seconds a role's loop waited for an unreachable database
	DatabaseUp          prometheus.Gauge       // 0 while a role of this process waits for the database
	SendFailures        *prometheus.CounterVec // channel, cause: failed sends by what went wrong
	PollFetchFailures   *prometheus.CounterVec // kind: polls that got no answer, by the fetcher's kind
	PollGiveBacks       *prometheus.CounterVec // why: claimed feeds given back without a request
	PollSlots           *prometheus.GaugeVec   // state: a pass's feeds fetching, waiting for their host, waiting for a fetch slot

	connects atomic.Int64 // database connections opened (CountConnect)
}

// New registers every metric on a fresh registry, with Go and process metrics.
func New() *Metrics {
	r := prometheus.NewRegistry()
	m := &Metrics{
		Registry: r,
		Polls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "feedmail_polls_total",
			Help: "Feed polls by outcome (ok, unchanged, not_modified, http_error, failure, refused, pushed, baseline) and HTTP status."}, []string{"outcome", "status"}),
		PollSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "feedmail_poll_duration_seconds",
			Help: "Time from request to full response body.", Buckets: []float64{.01, .05, .1, .25, .5, 1, 2, 5, 10, 30}}),
		Items: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "feedmail_items_total",
			Help: "Items first seen, by result (new, ignored, first_poll) and the ignore rule."}, []string{"result", "rule"}),
		Emails: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "feedmail_emails_total",
			Help: "Outbox emails by kind and result (sent, retry, failed, held, cancelled, expired)."}, []string{"kind", "result"}),
		DigestsSent: prometheus.NewCounter(prometheus.CounterOpts{Name: "feedmail_digest_issues_total",
			Help: "Digest issues assembled and queued."}),
		CreditsCharged: prometheus.NewCounter(prometheus.CounterOpts{Name: "feedmail_credits_charged_total",
			Help: "Credits charged for sent email."}),
		WebSub: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "feedmail_websub_events_total",
			Help: "WebSub subscriber events: discovered, subscribe, verified, denied, renew, content, bad_signature, lapsed, unsubscribed and the other outcomes the subscriber logs."}, []string{"event"}),
		ESPNotices: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "feedmail_esp_notices_total",
			Help: "Bounce and complaint notifications from email services (POST /webhooks/{provider}), by provider and outcome: applied, duplicate, ignored (not about an email of ours, or an event without effect), confirmed (an SNS subscription), refused (authentication, signature, topic, timestamp), replay, malformed, failed (the database: the service retries)."},
			[]string{"provider", "outcome"}),
		HTTPRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "feedmail_http_requests_total",
			Help: "HTTP requests served, by route pattern and status code."}, []string{"route", "code"}),
		QueueDepth: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "feedmail_queue_depth",
			Help: "Work waiting: due_feeds, outbox (queued emails), held (waiting for credits)."}, []string{"queue"}),
	}
	r.MustRegister(m.ESPNotices)
	m.Inbound = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "feedmail_inbound_total",
		Help: "Mail that came back, by kind (bounce, complaint, unsubscribe, auto-reply, unknown) and severity (hard, soft or empty)."},
		[]string{"kind", "severity"})
	r.MustRegister(m.Inbound)
	m.SenderFailures = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "feedmail_mail_sender_failures_total",
		Help: "Emails refused for the sender's own sake, by reason (blocked, sender-rejected, authentication, policy, rate-limited, syntax), at send time (the destination is paused and the email retried) or reported later by mail or an email service: never counted against the reader."},
		[]string{"reason"})
	r.MustRegister(m.SenderFailures)
	m.PollLag = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "feedmail_poll_lag_seconds",
		Help:    "How late a scheduled poll started: the time its worker took it up minus the feed's next_poll_at.",
		Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}})
	m.DBStatements = prometheus.NewCounter(prometheus.CounterOpts{Name: "feedmail_db_statements_total",
		Help: "Database round trips: SQL statements sent through the store's connection pool, BEGIN, COMMIT and ROLLBACK included."})
	m.FeedRecovery = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "feedmail_feed_recovery",
		Help: "Feeds that move or die, from the database: ailing (failing longer than an outage), frozen (a newer feed on its site), dead (readers told nothing was found), moved (feeds whose readers rediscovery moved), offered (readers' open offers of a new address), accepted (offers followed)."},
		[]string{"state"})
	r.MustRegister(m.PollLag, m.DBStatements, m.FeedRecovery)
	m.registerRecovery()
	r.MustRegister(m.Polls, m.PollSeconds, m.Items, m.Emails, m.DigestsSent, m.CreditsCharged, m.WebSub,
		m.HTTPRequests, m.QueueDepth, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// CountStatement counts one database round trip (store.Options.OnStatement).
func (m *Metrics) CountStatement() {
	if m != nil {
		m.DBStatements.Inc()
	}
}

// CountConnect counts one new database connection (store.Options.OnConnect).
func (m *Metrics) CountConnect() {
	if m != nil {
		m.connects.Add(1)
	}
}

// WatchPool exports the statistics of db, the store's pool: go_sql_* with
// db_name "feedmail" (open, in use and idle connections, waits, and those
// closed for idleness or age), feedmail_db_connections_opened_total (from
// CountConnect) and feedmail_db_connections_discarded_total, the ones closed
// for any other reason: a connection broken or abandoned mid-statement or
// mid-transaction (a cancelled context does that), which the pool replaces
// by a new one. Call it once per Metrics.
func (m *Metrics) WatchPool(db *sql.DB) {
	if m == nil || db == nil {
		return
	}
	opened := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "feedmail_db_connections_opened_total",
		Help: "Database connections the store's pool opened (Postgres)."},
		func() float64 { return float64(m.connects.Load()) })
	discarded := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "feedmail_db_connections_discarded_total",
		Help: "Database connections the store's pool closed other than for idleness or age: broken, or abandoned when a context ended mid-statement or mid-transaction (Postgres)."},
		func() float64 { return float64(Discarded(m.connects.Load(), db.Stats())) })
	m.Registry.MustRegister(collectors.NewDBStatsCollector(db, "feedmail"), opened, discarded)
}

// Discarded is how many of the opened connections a pool with stats st
// closed neither for idleness nor for age: opened less those still open
// and those closed by the pool's limits.
func Discarded(opened int64, st sql.DBStats) int64 {
	n := opened - int64(st.OpenConnections) - st.MaxIdleClosed - st.MaxIdleTimeClosed - st.MaxLifetimeClosed
	return max(n, 0)
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}

// Depths reads queue depths for the gauges.
type Depths func(ctx context.Context) (map[string]int64, error)

// WatchQueues refreshes the queue-depth gauges every interval until ctx ends.
func (m *Metrics) WatchQueues(ctx context.Context, every time.Duration, read Depths) {
	if m == nil {
		return
	}
	watch(ctx, every, m.QueueDepth, read)
}

// WatchRecovery refreshes the feed-recovery gauges every interval until
// ctx ends.
func (m *Metrics) WatchRecovery(ctx context.Context, every time.Duration, read Depths) {
	if m == nil {
		return
	}
	watch(ctx, every, m.FeedRecovery, read)
}

// watch sets gauge g from read every interval until ctx ends; a failed
// read keeps the last values.
func watch(ctx context.Context, every time.Duration, g *prometheus.GaugeVec, read Depths) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if d, err := read(ctx); err == nil {
			for k, v := range d {
				g.WithLabelValues(k).Set(float64(v))
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
