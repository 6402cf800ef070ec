package metrics

import "github.com/prometheus/client_golang/prometheus"

// registerRecovery makes and registers the metrics of faults and of the
// recovery from them: leases taken over, waits for the database, failed
// sends by cause, polls that got no answer by kind, claimed feeds given
// back without a request.
func (m *Metrics) registerRecovery() {
	m.TakenOver = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "feedmail_leases_taken_over_total",
		Help: "Leased work this process claimed after another holder's lease on it had run out (that process died or stalled), by kind: outbox (deliveries), digests, hosts (a poller's hosts, Postgres), feeds (SQLite)."},
		[]string{"kind"})
	m.OutboxLeaseRenewals = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "feedmail_outbox_lease_renewals_total",
		Help: "Renewals of the outbox lease by a pass that ran longer than a quarter of it, by result: renewed, failed (the database did not answer; the pass stops sending before its lease ends)."},
		[]string{"result"})
	m.DatabaseWait = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "feedmail_database_wait_seconds_total",
		Help: "Seconds a role's loop (poller, mailer, digest) waited for a database it could not reach, added when the database answered again."},
		[]string{"role"})
	m.DatabaseUp = prometheus.NewGauge(prometheus.GaugeOpts{Name: "feedmail_database_up",
		Help: "1 when every role of this process reached the database on its last pass, 0 while one waits for it."})
	m.DatabaseUp.Set(1)
	m.SendFailures = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "feedmail_send_failures_total",
		Help: "Failed sends by channel (email, webhook, …) and cause: unknown_outcome (the connection was lost after the message was handed over: the receiver may have it), reply_4xx, reply_5xx, no_reply (lost before the message was handed over), timeout, connect, other."},
		[]string{"channel", "cause"})
	m.PollFetchFailures = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "feedmail_poll_fetch_failures_total",
		Help: "Polls that got no HTTP answer (feedmail_polls_total{outcome=\"failure\",status=\"0\"}), by kind: timeout, connection (refused, reset, closed early, truncated), dns, tls, too_large, bad_encoding, too_many_redirects, bad_url, private_address, other."},
		[]string{"kind"})
	m.PollGiveBacks = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "feedmail_poll_givebacks_total",
		Help: "Claimed feeds given back without a request, by why: host_busy (its two request slots stayed taken past the lease's budget, e.g. by hung requests), slots_busy (every fetch slot of this process stayed taken that long), lease_short (no worker reached it in time), backed_off (its host asked us to slow down), stopping, db_error. The first three keep their place in line."},
		[]string{"why"})
	m.PollSlots = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "feedmail_poll_slots",
		Help: "The poller's claimed feeds by state: fetching (holding one of the process's fetch slots, 16 at most), waiting_host (waiting for one of their host's two request slots, holding no fetch slot), waiting_fetch (their host's slot taken, waiting for a fetch slot)."},
		[]string{"state"})
	m.Registry.MustRegister(m.TakenOver, m.OutboxLeaseRenewals, m.DatabaseWait, m.DatabaseUp, m.SendFailures, m.PollFetchFailures, m.PollGiveBacks, m.PollSlots)
}

// CountTakeover counts n rows of kind taken over (store.Options.OnTakeover).
func (m *Metrics) CountTakeover(kind string, n int) {
	if m != nil {
		m.TakenOver.WithLabelValues(kind).Add(float64(n))
	}
}

// CountLeaseRenewal counts one renewal of an outbox pass's lease.
func (m *Metrics) CountLeaseRenewal(ok bool) {
	if m == nil {
		return
	}
	result := "renewed"
	if !ok {
		result = "failed"
	}
	m.OutboxLeaseRenewals.WithLabelValues(result).Inc()
}

// CountSendFailure counts one failed send on channel, by cause.
func (m *Metrics) CountSendFailure(channel, cause string) {
	if m != nil {
		m.SendFailures.WithLabelValues(channel, cause).Inc()
	}
}
