package bench

import (
	"maps"
	"slices"
	"sort"
	"strings"
	"time"
)

// The chaos oracle: it judges the run from what the farm published and
// what the sink and the webhook receiver took in, trusting no feedmail
// table for deliveries. It is a pure function of its inputs (judge).

// post is one post the farm published in the window.
type post struct {
	Feed      string // the feed's URL
	Link      string // the post's link: what the email and the hook carry
	Published time.Time
	Pushed    bool // its feed advertises the hub (WebSub), not polled only
}

// reception is one message the sink or the receiver took in full.
type reception struct {
	Key     string // the Message-ID, or the webhook-id
	Reader  string // readerID of the recipient or the hook's path
	Links   []string
	At      time.Time
	Dropped bool // the sink closed the connection after the dot
}

// fault is one fault the bench injected.
type fault struct {
	Kind   string // faultKill, faultPG
	At     time.Time
	Detail string
}

// Fault kinds and how long their shadow lasts for the calm lag.
const (
	faultKill = "kill -9 serve"
	faultPG   = "postgres immediate restart"
)

// shadow is how long after a fault of kind a delivery is not "calm".
func shadow(kind string) time.Duration {
	if kind == faultPG {
		return 2 * time.Minute
	}
	return time.Minute
}

// verdict is the oracle's finding over the expected deliveries.
type verdict struct {
	Expected, Delivered, Lost int
	// Pending counts the deliveries not received at the end whose post
	// reached another of its readers less than inFlightGrace before it:
	// in flight (a digest reader's copy waits for the next slot), not yet
	// overdue, so not lost.
	Pending      int
	TwiceInside  int // an extra copy after a drop after the dot
	TwiceOutside int // any other extra copy
	// OutsideSame counts the outside copies that repeat a message already
	// accepted (same Message-ID or webhook-id: a sender crash between the
	// reply and its record); the rest are a second message for the post.
	OutsideSame int
	// InsideMessages counts the messages sent again after a drop after
	// the dot, once per message (a digest carries several deliveries).
	InsideMessages      int
	insideKeys          map[string]int
	OnlyDropped         int // delivered only as copies dropped after the dot
	LostList, TwiceList []string
	PendingList         []string
	Lag, CalmLag        []time.Duration // publication → first acceptance, sorted
	// The same split by the post's feed: pushed (advertises the hub) or
	// polled, sorted.
	PushLag, PushCalm, PollLag, PollCalm []time.Duration
	// PushNow and PushNowCalm are PushLag and PushCalm without the digest
	// readers' deliveries, which wait for the reader's next slot (one a
	// minute): what the engine takes from a push to an instant email or a
	// webhook.
	PushNow, PushNowCalm []time.Duration
	Unmatched            int         // receptions carrying no expected delivery
	Firsts               []firstCopy // each delivered one's first copy

	end       time.Time            // judged as of then (zero: nothing pending)
	firstSeen map[string]time.Time // each post's first copy to any reader
}

// firstSeen returns when each post link first reached any reader (a
// dropped copy counts: the post was in feedmail's hands by then).
func firstSeen(recs []reception) map[string]time.Time {
	out := map[string]time.Time{}
	for _, r := range recs {
		for _, l := range r.Links {
			if t, ok := out[l]; !ok || r.At.Before(t) {
				out[l] = r.At
			}
		}
	}
	return out
}

// firstCopy is when an expected delivery's first copy arrived.
type firstCopy struct {
	Link string
	At   time.Time
}

// delivery is one expected post × reader.
type delivery struct{ link, reader string }

// compare orders deliveries by link, then reader.
func (d delivery) compare(e delivery) int {
	if c := strings.Compare(d.link, e.link); c != 0 {
		return c
	}
	return strings.Compare(d.reader, e.reader)
}

// inFlightGrace is how long after a post first reached one of its readers
// another reader's copy may still be on its way: a digest's slot (the
// chaos digests have one a minute) and its assembly and sending, with room
// for a retry. Until then a missing copy is pending, not lost.
const inFlightGrace = 3 * time.Minute

// judge compares the expected deliveries (each post × each reader of its
// feed, readers[feed]) with the receptions up to end. Two copies of one
// message (same key) are inside the SMTP window when a copy before was
// dropped after the dot, outside otherwise; two different messages
// carrying the same post to the same reader are always outside. A missing
// copy is lost, or pending when the post reached another reader less than
// inFlightGrace before end (a zero end: never pending).
func judge(posts []post, readers map[string][]string, recs []reception, faults []fault, end time.Time) verdict {
	v := verdict{end: end, firstSeen: firstSeen(recs)}
	byDelivery := map[delivery][]reception{}
	published := map[string]post{}
	for _, p := range posts {
		published[p.Link] = p
		for _, r := range readers[p.Feed] {
			byDelivery[delivery{p.Link, r}] = nil
		}
	}
	sorted := slices.Clone(recs)
	sort.SliceStable(sorted, func(a, b int) bool { return sorted[a].At.Before(sorted[b].At) })
	for _, r := range sorted {
		hit := false
		for _, l := range r.Links {
			d := delivery{l, r.Reader}
			if got, ok := byDelivery[d]; ok {
				byDelivery[d] = append(got, r)
				hit = true
			}
		}
		if !hit {
			v.Unmatched++
		}
	}
	for _, d := range slices.SortedFunc(maps.Keys(byDelivery), delivery.compare) {
		v.add(d, byDelivery[d], published[d.link], faults)
	}
	for _, l := range [][]time.Duration{v.Lag, v.CalmLag, v.PushLag, v.PushCalm, v.PollLag, v.PollCalm, v.PushNow, v.PushNowCalm} {
		slices.Sort(l)
	}
	return v
}

// add counts one expected delivery from its receptions (in time order).
func (v *verdict) add(d delivery, got []reception, p post, faults []fault) {
	v.Expected++
	if len(got) == 0 {
		if first, ok := v.firstSeen[d.link]; ok && !v.end.IsZero() && v.end.Sub(first) < inFlightGrace {
			v.Pending++
			v.PendingList = append(v.PendingList, d.reader+" ← "+d.link)
			return
		}
		v.Lost++
		v.LostList = append(v.LostList, d.reader+" ← "+d.link)
		return
	}
	v.Delivered++
	c := copies(got)
	inside, outside, accepted := c.inside, c.outside, c.accepted
	v.TwiceInside += inside
	v.TwiceOutside += outside
	v.OutsideSame += c.outsideSame
	if v.insideKeys == nil {
		v.insideKeys = map[string]int{}
	}
	for k, n := range c.insideKeys {
		if n > v.insideKeys[k] {
			v.InsideMessages += n - v.insideKeys[k]
			v.insideKeys[k] = n
		}
	}
	if outside > 0 {
		v.TwiceList = append(v.TwiceList, d.reader+" ← "+d.link)
	}
	if !accepted {
		v.OnlyDropped++
	}
	v.Firsts = append(v.Firsts, firstCopy{Link: d.link, At: got[0].At})
	lag := max(got[0].At.Sub(p.Published), 0)
	quiet := calm(got[0].At, faults)
	v.Lag = append(v.Lag, lag)
	all, calmed := &v.PollLag, &v.PollCalm
	if p.Pushed {
		all, calmed = &v.PushLag, &v.PushCalm
	}
	*all = append(*all, lag)
	if quiet {
		v.CalmLag = append(v.CalmLag, lag)
		*calmed = append(*calmed, lag)
	}
	if p.Pushed && !digestReader(d.reader) {
		v.PushNow = append(v.PushNow, lag)
		if quiet {
			v.PushNowCalm = append(v.PushNowCalm, lag)
		}
	}
}

// copyCounts is how one delivery's copies split.
type copyCounts struct {
	inside, outside, outsideSame int
	accepted                     bool
	insideKeys                   map[string]int // inside copies per message
}

// copies splits the extra copies of one delivery into inside and outside
// the SMTP window (outsideSame: repeats of a message already accepted),
// and says whether any copy was accepted with a reply.
func copies(got []reception) copyCounts {
	c := copyCounts{insideKeys: map[string]int{}}
	drops := map[string]int{} // drops of each key not yet followed by a copy
	acceptedKey := map[string]bool{}
	for i, r := range got {
		switch {
		case i == 0:
		case drops[r.Key] > 0:
			c.inside++
			c.insideKeys[r.Key]++
			drops[r.Key]--
		default:
			c.outside++
			if acceptedKey[r.Key] {
				c.outsideSame++
			}
		}
		if r.Dropped {
			drops[r.Key]++
		} else {
			c.accepted = true
			acceptedKey[r.Key] = true
		}
	}
	return c
}

// calm reports whether at is outside every fault's shadow.
func calm(at time.Time, faults []fault) bool {
	for _, f := range faults {
		if !at.Before(f.At) && at.Before(f.At.Add(shadow(f.Kind))) {
			return false
		}
	}
	return true
}

// durQuantile is the q-quantile of sorted (nearest rank), 0 when empty.
func durQuantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
