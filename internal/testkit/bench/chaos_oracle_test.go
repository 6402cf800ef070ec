package bench

import (
	"slices"
	"testing"
	"time"
)

// TestJudge: the oracle's counts for each way a delivery can go.
func TestJudge(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	posts := []post{{Feed: "f", Link: "http://h/f/i/1", Published: t0}}
	readers := map[string][]string{"f": {"mail:a", "hook:/h/1"}}
	rec := func(key, reader string, s int, dropped bool) reception {
		return reception{Key: key, Reader: reader, Links: []string{"http://h/f/i/1"}, At: at(s), Dropped: dropped}
	}
	tests := []struct {
		name                                  string
		recs                                  []reception
		faults                                []fault
		lost, inside, outside, onlyDrop, calm int
		same                                  int
		p50                                   time.Duration
	}{
		{name: "both once", recs: []reception{rec("m1", "mail:a", 10, false), rec("w1", "hook:/h/1", 20, false)},
			calm: 2, p50: 10 * time.Second},
		{name: "one lost", recs: []reception{rec("m1", "mail:a", 10, false)}, lost: 1, calm: 1, p50: 10 * time.Second},
		{name: "dropped then sent again: inside", recs: []reception{rec("m1", "mail:a", 10, true), rec("m1", "mail:a", 70, false),
			rec("w1", "hook:/h/1", 20, false)}, inside: 1, calm: 2, p50: 10 * time.Second},
		{name: "two 250s of one message: outside", recs: []reception{rec("m1", "mail:a", 10, false), rec("m1", "mail:a", 11, false),
			rec("w1", "hook:/h/1", 20, false)}, outside: 1, same: 1, calm: 2, p50: 10 * time.Second},
		{name: "two messages for one delivery: outside", recs: []reception{rec("m1", "mail:a", 10, true), rec("m2", "mail:a", 11, false),
			rec("w1", "hook:/h/1", 20, false)}, outside: 1, calm: 2, p50: 10 * time.Second},
		{name: "only a dropped copy", recs: []reception{rec("m1", "mail:a", 10, true), rec("w1", "hook:/h/1", 20, false)},
			onlyDrop: 1, calm: 2, p50: 10 * time.Second},
		{name: "in a fault's shadow", recs: []reception{rec("m1", "mail:a", 10, false), rec("w1", "hook:/h/1", 100, false)},
			faults: []fault{{Kind: faultKill, At: at(5)}}, calm: 1, p50: 10 * time.Second},
		{name: "another reader's copy is not ours", recs: []reception{rec("m1", "mail:b", 10, false), rec("w1", "hook:/h/1", 20, false)},
			lost: 1, calm: 1, p50: 20 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := judge(posts, readers, tt.recs, tt.faults, time.Time{})
			if v.InsideMessages != tt.inside || v.OutsideSame != tt.same {
				t.Errorf("messages sent again after a drop %d, outside copies of an accepted message %d; want %d, %d",
					v.InsideMessages, v.OutsideSame, tt.inside, tt.same)
			}
			if v.Expected != 2 || v.Lost != tt.lost || v.Delivered != 2-tt.lost || v.TwiceInside != tt.inside ||
				v.TwiceOutside != tt.outside || v.OnlyDropped != tt.onlyDrop || len(v.CalmLag) != tt.calm {
				t.Errorf("got expected %d delivered %d lost %d inside %d outside %d only-dropped %d calm %d; want 2, %d, %d, %d, %d, %d, %d",
					v.Expected, v.Delivered, v.Lost, v.TwiceInside, v.TwiceOutside, v.OnlyDropped, len(v.CalmLag),
					2-tt.lost, tt.lost, tt.inside, tt.outside, tt.onlyDrop, tt.calm)
			}
			if got := durQuantile(v.Lag, 0.5); got != tt.p50 {
				t.Errorf("lag p50 %s, want %s", got, tt.p50)
			}
			if tt.lost > 0 && len(v.LostList) != tt.lost {
				t.Errorf("lost list %v", v.LostList)
			}
		})
	}
}

// TestPlanFaults: the schedule is the same for one seed, kills about
// every KillEvery, and a short window still gets a cluster restart.
func TestPlanFaults(t *testing.T) {
	tests := []struct {
		window             time.Duration
		minKills, maxKills int
		pgRestarts         int
	}{
		{3 * time.Minute, 2, 3, 1},
		{30 * time.Minute, 28, 30, 2},
		{19 * time.Minute, 17, 19, 1},
	}
	for _, tt := range tests {
		a := planFaults(7, tt.window, time.Minute, 10*time.Minute, 3)
		b := planFaults(7, tt.window, time.Minute, 10*time.Minute, 3)
		if len(a) != len(b) {
			t.Fatalf("%s: two plans from one seed differ: %d and %d events", tt.window, len(a), len(b))
		}
		kills, pg := 0, 0
		for i, e := range a {
			if e != b[i] {
				t.Errorf("%s: event %d differs: %+v and %+v", tt.window, i, e, b[i])
			}
			if i > 0 && e.At < a[i-1].At || e.At >= tt.window {
				t.Errorf("%s: event %d at %s out of order or outside the window", tt.window, i, e.At)
			}
			switch e.Kind {
			case faultKill:
				kills++
				if e.Serve < 0 || e.Serve > 2 || e.Down < 3*time.Second || e.Down > 8*time.Second {
					t.Errorf("%s: kill %+v", tt.window, e)
				}
			case faultPG:
				pg++
			}
		}
		if kills < tt.minKills || kills > tt.maxKills || pg != tt.pgRestarts {
			t.Errorf("%s: %d kills and %d cluster restarts, want %d–%d and %d", tt.window, kills, pg, tt.minKills, tt.maxKills, tt.pgRestarts)
		}
	}
}

// TestReadEmail: the Message-ID and the post links come out of a quoted-
// printable multipart email, soft line breaks and all.
func TestReadEmail(t *testing.T) {
	msg := "Message-ID: <item-3-9.abc@bench.example>\r\nMIME-Version: 1.0\r\n" +
		"Content-Type: multipart/alternative; boundary=b1\r\n\r\n" +
		"--b1\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n" +
		"Read it: http://127.0.0.1:8080/feeds/12/i/=\r\n34 and again http://127.0.0.1:8080/feeds/12/i/34\r\n" +
		"--b1\r\nContent-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: base64\r\n\r\n" +
		"PGEgaHJlZj0iaHR0cDovLzEyNy4wLjAuMTo4MDgwL2ZlZWRzLzEyL2kvMzUiPng8L2E+\r\n--b1--\r\n"
	key, links, err := readEmail([]byte(msg))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"http://127.0.0.1:8080/feeds/12/i/34", "http://127.0.0.1:8080/feeds/12/i/35"}
	if key != "<item-3-9.abc@bench.example>" || len(links) != 2 || links[0] != want[0] || links[1] != want[1] {
		t.Errorf("got %q %q, want the Message-ID and %q", key, links, want)
	}
	if got := dedupeOf(key, nil); got != "item:3:9" {
		t.Errorf("dedupe key %q, want item:3:9", got)
	}
	if got := dedupeOf("<digest.77.xyz@d>", nil); got != "digest:77" {
		t.Errorf("dedupe key %q, want digest:77", got)
	}
	if got := dedupeOf("feedmail-5", map[int64]string{5: "item:1:2"}); got != "item:1:2" {
		t.Errorf("dedupe key %q, want item:1:2", got)
	}
}

// TestJudgeDigestResent: a digest carrying two posts, dropped after the
// dot and sent again, is two deliveries twice inside the window but one
// message sent again, which is what the drops injected are held against.
func TestJudgeDigestResent(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	posts := []post{{Feed: "f", Link: "http://h/f/i/1", Published: t0}, {Feed: "f", Link: "http://h/f/i/2", Published: t0}}
	readers := map[string][]string{"f": {"mail:d"}}
	links := []string{"http://h/f/i/1", "http://h/f/i/2"}
	recs := []reception{{Key: "<digest.1>", Reader: "mail:d", Links: links, At: t0.Add(time.Minute), Dropped: true},
		{Key: "<digest.1>", Reader: "mail:d", Links: links, At: t0.Add(2 * time.Minute)}}
	v := judge(posts, readers, recs, nil, time.Time{})
	if v.Lost != 0 || v.TwiceInside != 2 || v.InsideMessages != 1 || v.TwiceOutside != 0 {
		t.Errorf("lost %d, inside %d (%d messages), outside %d; want 0, 2 (1), 0", v.Lost, v.TwiceInside, v.InsideMessages, v.TwiceOutside)
	}
}

// TestDrainWaitsForDigestCopiesInFlight: a drain that reaches its deadline
// while posts are still being polled (some never are) must not call lost
// the digest copies of the posts polled in its last minute, whose instant
// copies are in: a digest reader's copy waits for the next slot. It waits
// for them (at most inFlightGrace past the deadline), and still calls lost
// a digest copy that never came and the copies of a post never polled.
func TestDrainWaitsForDigestCopiesInFlight(t *testing.T) {
	deadline := time.Date(2026, 1, 1, 12, 10, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return deadline.Add(d) }
	link := func(n int) string { return "http://h/f/i/" + string(rune('0'+n)) }
	var posts []post
	for n := 1; n <= 4; n++ {
		posts = append(posts, post{Feed: "f", Link: link(n), Published: at(-15 * time.Minute)})
	}
	readers := map[string][]string{"f": {"mail:a", "mail:b", "mail:d"}} // mail:d reads f in a digest
	rec := func(n int, reader string, d time.Duration) reception {
		return reception{Key: reader + link(n), Reader: reader, Links: []string{link(n)}, At: at(d)}
	}
	recs := []reception{
		// 1: polled 30 s before the deadline; its digest slot comes after it.
		rec(1, "mail:a", -30*time.Second), rec(1, "mail:b", -29*time.Second), rec(1, "mail:d", 40*time.Second),
		// 2: polled early, all in.
		rec(2, "mail:a", -9*time.Minute), rec(2, "mail:b", -9*time.Minute), rec(2, "mail:d", -8*time.Minute),
		// 3: the instant copies long ago, the digest copy never.
		rec(3, "mail:a", -8*time.Minute), rec(3, "mail:b", -8*time.Minute),
		// 4: never polled.
	}
	upTo := func(now time.Time) []reception {
		var out []reception
		for _, r := range recs {
			if !r.At.After(now) {
				out = append(out, r)
			}
		}
		return out
	}
	now := at(-time.Minute)
	for !drainDone(judge(posts, readers, upTo(now), nil, now), now, deadline) {
		now = now.Add(5 * time.Second)
		if now.After(deadline.Add(time.Hour)) {
			t.Fatal("the drain never stops")
		}
	}
	if now.After(deadline.Add(inFlightGrace)) {
		t.Errorf("the drain stopped at %s, more than %s after its deadline", now.Sub(deadline), inFlightGrace)
	}
	v := judge(posts, readers, upTo(now), nil, now)
	want := []string{"mail:d ← " + link(3), "mail:a ← " + link(4), "mail:b ← " + link(4), "mail:d ← " + link(4)}
	if v.Lost != len(want) || v.Pending != 0 || v.Delivered != 12-len(want) || !slices.Equal(v.LostList, want) {
		t.Errorf("stopped %s after the deadline: lost %d %q, pending %d, delivered %d; want lost %q, none pending, %d delivered",
			now.Sub(deadline), v.Lost, v.LostList, v.Pending, v.Delivered, want, 12-len(want))
	}
}

// TestDrainDone: when the drain stops, by what is missing and the clock.
func TestDrainDone(t *testing.T) {
	deadline := time.Date(2026, 1, 1, 12, 10, 0, 0, time.UTC)
	tests := []struct {
		name          string
		lost, pending int
		now           time.Time
		done          bool
	}{
		{"all in before the deadline", 0, 0, deadline.Add(-time.Minute), true},
		{"missing before the deadline", 1, 0, deadline.Add(-time.Minute), false},
		{"in flight before the deadline", 0, 1, deadline.Add(-time.Minute), false},
		{"only overdue ones after the deadline", 3, 0, deadline.Add(time.Second), true},
		{"in flight after the deadline", 3, 1, deadline.Add(time.Second), false},
		{"in flight past the grace", 3, 1, deadline.Add(inFlightGrace), true},
	}
	for _, tt := range tests {
		if got := drainDone(verdict{Lost: tt.lost, Pending: tt.pending}, tt.now, deadline); got != tt.done {
			t.Errorf("%s: done %v, want %v", tt.name, got, tt.done)
		}
	}
}

// TestJudgeSplitsByKind: lags are split by the post's feed, pushed by the
// hub or polled, overall and outside the faults' shadow; a pushed post's
// lag to a digest reader, who waits for a slot, is left out of PushNow.
func TestJudgeSplitsByKind(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	posts := []post{{Feed: "push", Link: "l1", Published: t0, Pushed: true}, {Feed: "poll", Link: "l2", Published: t0}}
	dr := "mail:" + chaosDigestUser + "1@bench.example"
	readers := map[string][]string{"push": {"mail:a", "mail:b", dr}, "poll": {"mail:a"}}
	recs := []reception{
		{Key: "m1", Reader: "mail:a", Links: []string{"l1"}, At: at(2)},
		{Key: "m2", Reader: "mail:b", Links: []string{"l1"}, At: at(40)}, // in the kill's shadow
		{Key: "m3", Reader: "mail:a", Links: []string{"l2"}, At: at(300)},
		{Key: "d1", Reader: dr, Links: []string{"l1"}, At: at(58)}, // its digest's slot
	}
	v := judge(posts, readers, recs, []fault{{Kind: faultKill, At: at(30)}}, time.Time{})
	tests := []struct {
		name string
		got  []time.Duration
		want []time.Duration
	}{
		{"pushed", v.PushLag, []time.Duration{2 * time.Second, 40 * time.Second, 58 * time.Second}},
		{"pushed calm", v.PushCalm, []time.Duration{2 * time.Second}},
		{"pushed, no digest", v.PushNow, []time.Duration{2 * time.Second, 40 * time.Second}},
		{"pushed, no digest, calm", v.PushNowCalm, []time.Duration{2 * time.Second}},
		{"polled", v.PollLag, []time.Duration{300 * time.Second}},
		{"polled calm", v.PollCalm, []time.Duration{300 * time.Second}},
		{"all", v.Lag, []time.Duration{2 * time.Second, 40 * time.Second, 58 * time.Second, 300 * time.Second}},
	}
	for _, tt := range tests {
		if !slices.Equal(tt.got, tt.want) {
			t.Errorf("%s lags %v, want %v", tt.name, tt.got, tt.want)
		}
	}
}

// TestHookReplyLostIsInsideTheWindow: a webhook taken whose 2xx a killed
// serve never got (marked by the front or taken from a sender already
// gone) and sent again with the same webhook-id is a repeat inside the
// window; the same repeat without the mark is outside.
func TestHookReplyLostIsInsideTheWindow(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	posts := []post{{Feed: "f", Link: "http://h/f/i/1", Published: t0}}
	readers := map[string][]string{"f": {"hook:/h/1"}}
	body := []byte(`{"type":"post","data":{"link":"http://h/f/i/1"}}`)
	for _, c := range []struct {
		name            string
		mark            func(*recorder)
		taken           bool // the first copy came from a sender already gone
		inside, outside int
	}{
		{name: "no mark", outside: 1},
		{name: "front saw the sender gone", mark: func(r *recorder) { r.hookReplyLost("feedmail-7", "/h/1") }, inside: 1},
		{name: "receiver saw the sender gone", taken: true, inside: 1},
		{name: "a mark for another target", mark: func(r *recorder) { r.hookReplyLost("feedmail-7", "/h/2") }, outside: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			var r recorder
			r.hook("feedmail-7", "/h/1", body, t0.Add(time.Second), c.taken)
			if c.mark != nil {
				c.mark(&r)
			}
			r.hook("feedmail-7", "/h/1", body, t0.Add(70*time.Second), false)
			recs, _, _ := r.snapshot()
			v := judge(posts, readers, recs, nil, time.Time{})
			if v.Delivered != 1 || v.TwiceInside != c.inside || v.TwiceOutside != c.outside {
				t.Errorf("delivered %d, inside %d, outside %d; want 1, %d, %d", v.Delivered, v.TwiceInside, v.TwiceOutside, c.inside, c.outside)
			}
		})
	}
}
