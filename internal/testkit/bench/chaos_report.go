package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/feedmail/feedmail/internal/testkit/farm"
	"github.com/feedmail/feedmail/internal/testkit/hooksink"
	"github.com/feedmail/feedmail/internal/testkit/hubtest"
	"github.com/feedmail/feedmail/internal/testkit/smtptest"
)

// ChaosReport is what RunChaos found. Lags are seconds.
type ChaosReport struct {
	Machine   Machine        `json:"machine"`
	Commit    string         `json:"commit,omitempty"`
	Feeds     int            `json:"feeds"`
	Hosts     int            `json:"hosts"`
	Processes int            `json:"processes"`
	Seed      int64          `json:"seed"`
	Window    string         `json:"window"`
	Share     float64        `json:"publish_share_per_5min"`
	Readers   map[string]int `json:"readers"` // subscriptions by kind

	Posts     int `json:"posts_published"` // in the window
	Expected  int `json:"expected_deliveries"`
	Delivered int `json:"delivered"`
	Lost      int `json:"lost"`
	// Pending: not received at the end, their post having reached another
	// reader less than inFlightGrace before (in flight, not overdue).
	Pending      int      `json:"pending_in_flight_at_end"`
	TwiceInside  int      `json:"twice_inside_smtp_window"`
	TwiceOutside int      `json:"twice_outside"`
	OutsideSame  int      `json:"twice_outside_same_message"` // the same Message-ID/webhook-id accepted again
	InsideMsgs   int      `json:"messages_sent_again_after_drop"`
	OnlyDropped  int      `json:"delivered_only_dropped_after_dot"`
	LostList     []string `json:"lost_list,omitempty"`
	PendingList  []string `json:"pending_list,omitempty"`
	TwiceList    []string `json:"twice_outside_list,omitempty"`
	// LostWhy and TwiceWhy explain them from feedmail's tables and the
	// receptions' times (chaos_explain.go); they judge nothing.
	LostWhy    []string `json:"lost_why,omitempty"`
	TwiceWhy   []string `json:"twice_outside_why,omitempty"`
	Unmatched  int      `json:"messages_not_expected"` // notices, posts from before the window
	Unreadable int      `json:"messages_unreadable"`
	LagP50     float64  `json:"lag_p50_s"`
	LagP99     float64  `json:"lag_p99_s"`
	LagMax     float64  `json:"lag_max_s"`
	CalmLagP50 float64  `json:"calm_lag_p50_s"`
	CalmLagP99 float64  `json:"calm_lag_p99_s"`
	CalmCount  int      `json:"calm_deliveries"`
	// SeenLag*: from the poll that first saw the post (feedmail's
	// items.seen_at) to acceptance; the rest of the lag is the poll interval.
	SeenLagP50  float64 `json:"seen_lag_p50_s"`
	SeenLagP99  float64 `json:"seen_lag_p99_s"`
	SeenCalmP50 float64 `json:"calm_seen_lag_p50_s"`
	SeenCalmP99 float64 `json:"calm_seen_lag_p99_s"`
	// Pushed and Polled split the lag by the post's feed: advertising the
	// hub (WebSub) or polled only.
	HubShare float64   `json:"hub_share"`
	Pushed   LagLine   `json:"lag_pushed"`
	PushNow  LagLine   `json:"lag_pushed_instant_and_webhook"` // Pushed without digest readers
	Polled   LagLine   `json:"lag_polled"`
	Hub      *HubCount `json:"hub,omitempty"`

	Faults   map[string]int       `json:"faults"` // injected, by kind
	FaultLog []string             `json:"fault_log"`
	SMTP     smtptest.FaultCounts `json:"smtp_faults"`
	Feed     farm.FaultCounts     `json:"feed_faults"`
	Hooks    hooksink.Counts      `json:"webhook_receiver"`
	// HookRepliesLost: webhooks taken whose 2xx never reached serve (it
	// was killed first): the webhook's own duplicate window.
	HookRepliesLost int64    `json:"webhook_replies_lost"`
	PenaltyPokes    int      `json:"penalized_feeds_made_due_in_drain"`
	Drained         string   `json:"drain"`
	Charges         Charges  `json:"charges"`
	ServeCPU        float64  `json:"serve_cpu_s"` // all serves, all incarnations
	ServeCores      float64  `json:"serve_cores"` // over the window and drain
	Bare            *Bare    `json:"bare_loop,omitempty"`
	Took            string   `json:"took"`
	Notes           []string `json:"notes,omitempty"`
	Failed          []string `json:"failed,omitempty"` // why the run fails #42's bar; empty: it passes
}

// LagLine is one kind of feed's lag, publication → acceptance, in seconds.
type LagLine struct {
	Count     int     `json:"deliveries"`
	P50       float64 `json:"p50_s"`
	P99       float64 `json:"p99_s"`
	Max       float64 `json:"max_s"`
	CalmCount int     `json:"calm_deliveries"`
	CalmP50   float64 `json:"calm_p50_s"`
	CalmP99   float64 `json:"calm_p99_s"`
}

// lagLine summarizes sorted lags, all and calm.
func lagLine(all, calm []time.Duration) LagLine {
	sec := func(d time.Duration) float64 { return d.Round(100 * time.Millisecond).Seconds() }
	return LagLine{Count: len(all), P50: sec(durQuantile(all, 0.5)), P99: sec(durQuantile(all, 0.99)), Max: sec(durQuantile(all, 1)),
		CalmCount: len(calm), CalmP50: sec(durQuantile(calm, 0.5)), CalmP99: sec(durQuantile(calm, 0.99))}
}

// HubCount is what the WebSub hub and the callback front did.
type HubCount struct {
	hubtest.Counts
	Forwarded  int64 `json:"front_forwarded"`   // callbacks a serve answered
	FailedOver int64 `json:"front_failed_over"` // tries at a serve that was down
	Failed     int64 `json:"front_failed"`      // answered 502 (the hub retries)
}

func newChaosReport(cfg ChaosConfig) *ChaosReport {
	return &ChaosReport{Machine: machine(""), Feeds: cfg.Feeds, Hosts: cfg.Hosts, Processes: cfg.Processes, Seed: cfg.Seed,
		Window: cfg.Window.String(), Share: cfg.PublishShare, Readers: map[string]int{}, Faults: map[string]int{}}
}

// fill copies the oracle's verdict and the run's counts into r.
func (r *ChaosReport) fill(c *chaos, v verdict, posts, bad int) {
	r.Commit = c.s.commit
	r.Machine.Database = c.s.dbDesc
	r.Machine.LoadAvgEnd = loadAvg()
	r.Posts, r.Expected, r.Delivered, r.Lost = posts, v.Expected, v.Delivered, v.Lost
	r.TwiceInside, r.TwiceOutside, r.OnlyDropped = v.TwiceInside, v.TwiceOutside, v.OnlyDropped
	r.OutsideSame, r.InsideMsgs = v.OutsideSame, v.InsideMessages
	r.LostList, r.TwiceList = head(v.LostList, 50), head(v.TwiceList, 50)
	r.Pending, r.PendingList = v.Pending, head(v.PendingList, 50)
	r.Unmatched, r.Unreadable = v.Unmatched, bad
	sec := func(d time.Duration) float64 { return d.Round(100 * time.Millisecond).Seconds() }
	r.LagP50, r.LagP99 = sec(durQuantile(v.Lag, 0.5)), sec(durQuantile(v.Lag, 0.99))
	r.LagMax = sec(durQuantile(v.Lag, 1))
	r.CalmLagP50, r.CalmLagP99, r.CalmCount = sec(durQuantile(v.CalmLag, 0.5)), sec(durQuantile(v.CalmLag, 0.99)), len(v.CalmLag)
	r.HubShare = max(c.cfg.HubShare, 0)
	r.Pushed, r.Polled = lagLine(v.PushLag, v.PushCalm), lagLine(v.PollLag, v.PollCalm)
	r.PushNow = lagLine(v.PushNow, v.PushNowCalm)
	if c.hub != nil {
		r.Hub = &HubCount{Counts: c.hub.Counts(), Forwarded: c.front.forwarded.Load(), FailedOver: c.front.failedOver.Load(), Failed: c.front.failed.Load()}
	}
	for _, f := range c.faults {
		r.Faults[f.Kind]++
		r.FaultLog = append(r.FaultLog, f.At.UTC().Format("15:04:05.0")+" "+f.Kind+": "+f.Detail)
	}
	r.SMTP = c.sinks[0].FaultCounts()
	var cpu time.Duration
	for _, sp := range c.serves {
		cpu += sp.cpu + sp.last
	}
	r.ServeCPU = cpu.Seconds()
	if span := time.Since(c.w0).Seconds(); span > 0 {
		r.ServeCores = cpu.Seconds() / span
	}
	r.Notes = append(r.Notes, c.s.notes...)
}

// head is at most n of l, saying how many were left out.
func head(l []string, n int) []string {
	if len(l) <= n {
		return l
	}
	return append(l[:n:n], fmt.Sprintf("… and %d more", len(l)-n))
}

// failures says why the run fails the bar for loss, duplicates
// and charges (none: it passes).
func (r *ChaosReport) failures() []string {
	var f []string
	if r.Expected == 0 {
		f = append(f, "no expected deliveries: nothing was judged")
	}
	if r.Lost > 0 {
		f = append(f, fmt.Sprintf("%d lost", r.Lost))
	}
	if r.TwiceOutside > 0 {
		f = append(f, fmt.Sprintf("%d twice outside the SMTP window", r.TwiceOutside))
	}
	if window := r.SMTP.DroppedAfterDot + r.SMTP.ClientGone + r.HookRepliesLost; r.InsideMsgs > int(window) {
		f = append(f, fmt.Sprintf("%d messages sent again after a reply lost after the dot, more than the %d drops injected, %d hang-ups of a killed sender and %d webhook replies lost",
			r.InsideMsgs, r.SMTP.DroppedAfterDot, r.SMTP.ClientGone, r.HookRepliesLost))
	}
	if !r.Charges.ok() {
		f = append(f, fmt.Sprintf("charges: %d received uncharged, %d charged twice, %d refunded though received, %d charged not received",
			len(r.Charges.Uncharged), len(r.Charges.ChargedTwice), len(r.Charges.RefundedReceived), len(r.Charges.ChargedUnreceived)))
	}
	return f
}

// WriteJSON writes the report as indented JSON.
func (r *ChaosReport) WriteJSON(w io.Writer) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(r)
}

// WriteTable writes the report for people.
func (r *ChaosReport) WriteTable(w io.Writer) error {
	var b strings.Builder
	p := func(f string, a ...any) { fmt.Fprintf(&b, f+"\n", a...) }
	m := r.Machine
	p("chaos: %d feeds on %d hosts, %d serve processes, window %s, seed %d, commit %s", r.Feeds, r.Hosts, r.Processes, r.Window, r.Seed, r.Commit)
	p("machine: %d CPUs (%s), %s, load %s at start, %s at end; %s", m.CPUs, m.CPUModel, m.GoVersion, m.LoadAvg, m.LoadAvgEnd, m.Database)
	p("readers: %s; posts published in the window: %d (%.2f of the feeds each 5 min)", kv(r.Readers), r.Posts, r.Share)
	p("faults injected: %s; SMTP: %d dropped after the dot, %d answered 451, %d slow", kv(r.Faults),
		r.SMTP.DroppedAfterDot, r.SMTP.TempFailed, r.SMTP.Slowed)
	p("feed hosts: %d requests, %d reset, %d hung, %d answered 500; webhooks (faulty receiver): %d accepted, %d answered 500, %d hung",
		r.Feed.Requests, r.Feed.Reset, r.Feed.Timeout, r.Feed.Status500, r.Hooks.Accepted, r.Hooks.Failed500, r.Hooks.TimedOut)
	p("expected deliveries %d: delivered %d, LOST %d, in flight at the end %d (their post reached another reader less than %s before)",
		r.Expected, r.Delivered, r.Lost, r.Pending, inFlightGrace)
	p("twice inside the SMTP or webhook window %d (%d messages sent again; drops injected %d, taken after a killed sender hung up %d, webhooks whose 2xx a killed sender never got %d), TWICE OUTSIDE %d (%d repeating an accepted message, %d a second message); delivered only as a copy whose reply was lost %d",
		r.TwiceInside, r.InsideMsgs, r.SMTP.DroppedAfterDot, r.SMTP.ClientGone, r.HookRepliesLost, r.TwiceOutside, r.OutsideSame, r.TwiceOutside-r.OutsideSame, r.OnlyDropped)
	c := r.Charges
	p("charges: %d paid messages received, %d charged exactly once (%d credits), %d refunds; %d received uncharged, %d charged twice, %d refunded though received, %d charged not received; in flight at the end %s",
		c.Messages, c.ChargedOnce, c.Credits, c.Refunds, len(c.Uncharged), len(c.ChargedTwice), len(c.RefundedReceived), len(c.ChargedUnreceived), kv(c.InFlight))
	p("lag publication → acceptance: p50 %.1f s, p99 %.1f s, max %.1f s; outside the minutes after a fault (%d deliveries): p50 %.1f s, p99 %.1f s",
		r.LagP50, r.LagP99, r.LagMax, r.CalmCount, r.CalmLagP50, r.CalmLagP99)
	for _, l := range []struct {
		kind string
		l    LagLine
	}{{"pushed (WebSub) feeds", r.Pushed}, {"pushed feeds to instant email and webhook readers (no digest slot)", r.PushNow}, {"polled feeds", r.Polled}} {
		p("lag %s, %d deliveries: p50 %.1f s, p99 %.1f s, max %.1f s; calm (%d): p50 %.1f s, p99 %.1f s",
			l.kind, l.l.Count, l.l.P50, l.l.P99, l.l.Max, l.l.CalmCount, l.l.CalmP50, l.l.CalmP99)
	}
	if h := r.Hub; h != nil {
		p("hub (%.2f of the feeds): %d subscriptions (%d verified, %d not), %d topics notified, %d fetched (%d failed tries), %d pushes accepted, %d tries failed, %d resent after a 2xx, %d given up; front: %d forwarded, %d tries at a serve that was down, %d answered 502",
			r.HubShare, h.Subscriptions, h.Verified, h.Unverified, h.Publishes, h.Fetches, h.FetchRetries, h.Delivered, h.Retries, h.Resent, h.GaveUp,
			h.Forwarded, h.FailedOver, h.Failed)
	}
	p("lag first seen by a poll → acceptance: p50 %.1f s, p99 %.1f s; calm: p50 %.1f s, p99 %.1f s (seen from feedmail's items table)",
		r.SeenLagP50, r.SeenLagP99, r.SeenCalmP50, r.SeenCalmP99)
	p("drain %s (%d penalized feeds made due); messages not expected %d, unreadable %d", r.Drained, r.PenaltyPokes, r.Unmatched, r.Unreadable)
	p("serve CPU %.1f s in all (%.2f cores over window and drain)", r.ServeCPU, r.ServeCores)
	if r.Bare != nil {
		p("bare loop: %d requests at %.0f/s, %.3f ms CPU per request", r.Bare.Requests, r.Bare.Rate, r.Bare.CPU)
	}
	p("took %s", r.Took)
	list := func(title string, l []string) {
		if len(l) > 0 {
			p("%s:", title)
			for _, s := range l {
				p("  %s", s)
			}
		}
	}
	list("fault log", r.FaultLog)
	list("lost", r.LostList)
	list("in flight at the end", r.PendingList)
	list("twice outside the window", r.TwiceList)
	list("why lost (feedmail's tables)", r.LostWhy)
	list("twice outside: the copies and the faults around them", r.TwiceWhy)
	list("received uncharged", head(c.Uncharged, 20))
	list("charged not received", head(c.ChargedUnreceived, 20))
	list("refunded though received", head(c.RefundedReceived, 20))
	list("notes", r.Notes)
	if len(r.Failed) == 0 {
		p("RESULT: PASS (0 lost, 0 twice outside the SMTP window, charges exact)")
	} else {
		p("RESULT: FAIL: %s", strings.Join(r.Failed, "; "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// kv writes a map as "k v, k v" in key order.
func kv[V any](m map[string]V) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %v", k, m[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
