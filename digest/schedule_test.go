package digest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
)

func mustSchedule(t *testing.T, spec, zone string) *Schedule {
	t.Helper()
	s, err := ParseSchedule(spec, zone)
	if err != nil {
		t.Fatalf("ParseSchedule(%q, %q): %v", spec, zone, err)
	}
	return s
}

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

func TestParseSchedule(t *testing.T) {
	tests := []struct {
		name, spec, zone string
		wantSpec         string
		wantZone         string
		wantErr          error
		errHas           string
	}{
		{name: "five fields", spec: "0 7 * * 1-5", zone: "Europe/Berlin", wantSpec: "0 7 * * 1-5", wantZone: "Europe/Berlin"},
		{name: "extra spaces", spec: "  0  7 *   * * ", wantSpec: "0 7 * * *", wantZone: "UTC"},
		{name: "names", spec: "30 6 1 jan-jun mon", wantSpec: "30 6 1 jan-jun mon", wantZone: "UTC"},
		{name: "daily", spec: "@daily", wantSpec: "@daily", wantZone: "UTC"},
		{name: "descriptor case", spec: "@Weekly", zone: "UTC", wantSpec: "@weekly", wantZone: "UTC"},
		{name: "monthly", spec: "@monthly", wantSpec: "@monthly", wantZone: "UTC"},
		{name: "hourly", spec: "@hourly", wantSpec: "@hourly", wantZone: "UTC"},
		{name: "every 10s", spec: "@every 10s", wantSpec: "@every 10s", wantZone: "UTC"},
		{name: "every 1h30m", spec: "@every 1h30m", zone: "Asia/Tokyo", wantSpec: "@every 1h30m", wantZone: "Asia/Tokyo"},
		{name: "preset key", spec: "daily", zone: "America/New_York", wantSpec: "0 7 * * *", wantZone: "America/New_York"},
		{name: "preset label", spec: "Weekly on Monday at 07:00", wantSpec: "0 7 * * 1", wantZone: "UTC"},
		{name: "preset twice", spec: "twice a day", wantSpec: "0 7,19 * * *", wantZone: "UTC"},
		{name: "preset twice key", spec: "twice-daily", wantSpec: "0 7,19 * * *", wantZone: "UTC"},
		{name: "leap day", spec: "0 0 29 2 *", wantSpec: "0 0 29 2 *", wantZone: "UTC"},
		{name: "dom or dow", spec: "0 0 30 2 1", wantSpec: "0 0 30 2 1", wantZone: "UTC"},

		{name: "empty", spec: "  ", wantErr: ErrBadSpec, errHas: "empty"},
		{name: "three fields", spec: "* * *", wantErr: ErrBadSpec, errHas: "expected exactly 5 fields"},
		{name: "six fields", spec: "0 0 7 * * *", wantErr: ErrBadSpec, errHas: "expected exactly 5 fields"},
		{name: "minute 61", spec: "61 * * * *", wantErr: ErrBadSpec, errHas: "above maximum"},
		{name: "garbage", spec: "every morning", wantErr: ErrBadSpec},
		{name: "every too short", spec: "@every 9s", wantErr: ErrBadSpec, errHas: "at least 10s"},
		{name: "every 9.9s", spec: "@every 9.9s", wantErr: ErrBadSpec, errHas: "at least 10s"},
		{name: "every negative", spec: "@every -1m", wantErr: ErrBadSpec, errHas: "at least 10s"},
		{name: "every bad", spec: "@every soon", wantErr: ErrBadSpec, errHas: "failed to parse duration"},
		{name: "unknown descriptor", spec: "@fortnightly", wantErr: ErrBadSpec, errHas: "unrecognized descriptor"},
		{name: "tz prefix", spec: "TZ=Europe/Berlin 0 7 * * *", wantErr: ErrBadSpec, errHas: "time zone separately"},
		{name: "cron_tz prefix", spec: "CRON_TZ=UTC 0 7 * * *", wantErr: ErrBadSpec},
		{name: "feb 30", spec: "0 0 30 2 *", wantErr: ErrBadSpec, errHas: "never fires"},
		{name: "apr 31", spec: "0 0 31 4,6,9,11 *", wantErr: ErrBadSpec, errHas: "never fires"},
		{name: "unknown zone", spec: "@daily", zone: "Mars/Olympus_Mons", wantErr: ErrBadZone},
		{name: "local zone", spec: "@daily", zone: "Local", wantErr: ErrBadZone},
		{name: "bad zone beats bad spec", spec: "nope", zone: "Nowhere/Nope", wantErr: ErrBadZone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseSchedule(tt.spec, tt.zone)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.errHas) {
					t.Errorf("err = %q, want it to mention %q", err, tt.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Spec() != tt.wantSpec || s.Location().String() != tt.wantZone {
				t.Errorf("got %q in %s, want %q in %s", s.Spec(), s.Location(), tt.wantSpec, tt.wantZone)
			}
			if !strings.Contains(s.String(), tt.wantZone) {
				t.Errorf("String() = %q", s.String())
			}
		})
	}
}

func TestPresetsParseAndAreFresh(t *testing.T) {
	ps := Presets()
	if len(ps) != 3 || ps[0].Key != "daily" || ps[1].Key != "weekly" || ps[2].Key != "twice-daily" {
		t.Fatalf("Presets() = %+v", ps)
	}
	for _, p := range ps {
		for _, in := range []string{p.Key, p.Label, p.Spec} {
			s, err := ParseSchedule(in, "Europe/Berlin")
			if err != nil || s.Spec() != p.Spec {
				t.Errorf("ParseSchedule(%q) = %v, %v; want spec %q", in, s, err, p.Spec)
			}
		}
	}
	ps[0].Spec = "changed"
	if Presets()[0].Spec != "0 7 * * *" {
		t.Error("Presets shares its backing array")
	}
}

func TestNext(t *testing.T) {
	tests := []struct {
		name, spec, zone string
		after, want      string
	}{
		{"daily utc before", "0 7 * * *", "", "2025-01-10T06:59:59Z", "2025-01-10T07:00:00Z"},
		{"strictly after", "0 7 * * *", "", "2025-01-10T07:00:00Z", "2025-01-11T07:00:00Z"},
		{"just after", "0 7 * * *", "", "2025-01-10T07:00:00.000000001Z", "2025-01-11T07:00:00Z"},
		{"berlin winter", "0 7 * * *", "Europe/Berlin", "2025-01-10T00:00:00Z", "2025-01-10T06:00:00Z"},
		{"berlin summer", "0 7 * * *", "Europe/Berlin", "2025-07-10T00:00:00Z", "2025-07-10T05:00:00Z"},
		{"new york", "0 7 * * *", "America/New_York", "2025-01-10T13:00:00Z", "2025-01-11T12:00:00Z"},
		{"after given in another zone", "0 7 * * *", "America/New_York", "2025-01-10T08:00:00+01:00", "2025-01-10T12:00:00Z"},
		{"kolkata half hour", "0 7 * * *", "Asia/Kolkata", "2025-01-10T00:00:00Z", "2025-01-10T01:30:00Z"},
		{"weekly monday preset", "weekly", "Europe/Berlin", "2025-01-10T00:00:00Z", "2025-01-13T06:00:00Z"},
		{"@weekly is sunday midnight", "@weekly", "UTC", "2025-01-10T00:00:00Z", "2025-01-12T00:00:00Z"},
		{"twice a day", "twice a day", "UTC", "2025-01-10T08:00:00Z", "2025-01-10T19:00:00Z"},
		{"monthly", "@monthly", "Europe/Berlin", "2025-01-10T00:00:00Z", "2025-01-31T23:00:00Z"},
		{"year wrap", "0 7 * * *", "", "2025-12-31T08:00:00Z", "2026-01-01T07:00:00Z"},
		{"leap day", "0 0 29 2 *", "", "2025-03-01T00:00:00Z", "2028-02-29T00:00:00Z"},
		{"leap day across 2100", "0 0 29 2 *", "", "2096-03-01T00:00:00Z", "2104-02-29T00:00:00Z"},
		{"dom or dow", "0 0 13 * 5", "", "2025-01-10T00:00:00Z", "2025-01-13T00:00:00Z"},
		{"every minute", "* * * * *", "Europe/Berlin", "2025-01-10T10:20:30Z", "2025-01-10T10:21:00Z"},
		{"every 10s grid", "@every 10s", "Europe/Berlin", "2025-01-10T10:20:31Z", "2025-01-10T10:20:40Z"},
		{"every 10s on slot", "@every 10s", "", "2025-01-10T10:20:40Z", "2025-01-10T10:20:50Z"},
		{"every 1h top of utc hour", "@every 1h", "Asia/Kolkata", "2025-01-10T10:20:31Z", "2025-01-10T11:00:00Z"},
		{"every 24h midnight utc", "@every 24h", "America/New_York", "2025-01-10T10:20:31Z", "2025-01-11T00:00:00Z"},
		// Sao Paulo 2018-11-04: midnight did not exist (00:00 → 01:00).
		{"sao paulo midnight gap", "0 0 * * *", "America/Sao_Paulo", "2018-11-03T12:00:00Z", "2018-11-04T03:00:00Z"},
		// Apia skipped all of 2011-12-30 (−10 → +14): its slot runs when the day ends.
		{"apia skipped day", "0 7 * * *", "Pacific/Apia", "2011-12-29T18:00:00Z", "2011-12-30T10:00:00Z"},
		{"apia day after", "0 7 * * *", "Pacific/Apia", "2011-12-30T10:00:00Z", "2011-12-30T17:00:00Z"},
		// Lord Howe moves its clocks by 30 minutes (02:00 → 02:30 on 2025-10-05).
		{"lord howe half-hour gap", "15 2 * * *", "Australia/Lord_Howe", "2025-10-04T12:00:00Z", "2025-10-04T15:30:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustSchedule(t, tt.spec, tt.zone)
			after, err := time.Parse(time.RFC3339Nano, tt.after)
			if err != nil {
				t.Fatal(err)
			}
			got := s.Next(after)
			if !got.Equal(utc(tt.want)) || got.Location() != time.UTC {
				t.Errorf("Next(%s) = %s, want %s (UTC)", tt.after, got, tt.want)
			}
		})
	}
}

// transition is one DST change: the local date it happens on.
type transition struct {
	zone string
	date string // YYYY-MM-DD local
	kind string // "spring" or "fall"
}

var dstTransitions = []transition{
	{"America/New_York", "2025-03-09", "spring"},
	{"America/New_York", "2025-11-02", "fall"},
	{"Europe/Berlin", "2025-03-30", "spring"},
	{"Europe/Berlin", "2025-10-26", "fall"},
	{"America/New_York", "2026-03-08", "spring"},
	{"Europe/Berlin", "2026-10-25", "fall"},
}

// slotsBetween lists every slot in (from, to] by repeated Next.
func slotsBetween(t *testing.T, s *Schedule, from, to time.Time) []time.Time {
	t.Helper()
	var out []time.Time
	for cur := s.Next(from); !cur.After(to); cur = s.Next(cur) {
		if len(out) > 0 && !cur.After(out[len(out)-1]) {
			t.Fatalf("Next not increasing: %s after %s", cur, out[len(out)-1])
		}
		out = append(out, cur)
		if len(out) > 100000 {
			t.Fatal("runaway")
		}
	}
	return out
}

// TestNextDSTOncePerDay: every daily wall time, including the ones inside
// the skipped and the repeated hour, runs exactly once on each local day over
// two weeks around each transition.
func TestNextDSTOncePerDay(t *testing.T) {
	walls := []string{"0 0", "30 1", "59 1", "0 2", "30 2", "59 2", "0 3", "30 3", "0 7", "59 23"}
	for _, tr := range dstTransitions {
		loc := mustZone(t, tr.zone)
		day, _ := time.ParseInLocation("2006-01-02", tr.date, loc)
		from, to := day.AddDate(0, 0, -7), day.AddDate(0, 0, 7)
		for _, w := range walls {
			spec := w + " * * *"
			t.Run(tr.zone+"/"+tr.date+"/"+spec, func(t *testing.T) {
				s := mustSchedule(t, spec, tr.zone)
				perDay := map[string]int{}
				for _, x := range slotsBetween(t, s, from, to) {
					perDay[x.In(loc).Format("2006-01-02")]++
				}
				if len(perDay) != 14 {
					t.Errorf("slots on %d days, want 14: %v", len(perDay), perDay)
				}
				for d, n := range perDay {
					if n != 1 {
						t.Errorf("%s: %d slots, want 1", d, n)
					}
				}
			})
		}
	}
}

// TestNextDSTChoices pins where the slots of the transition days land.
func TestNextDSTChoices(t *testing.T) {
	tests := []struct {
		zone, spec, day string // day: local date of the transition
		want            string // the slot on that day
		wantLocal       string // the same, as local wall time with offset
	}{
		// Spring forward: a skipped wall time runs when the gap ends, 03:00.
		{"America/New_York", "30 2 * * *", "2025-03-09", "2025-03-09T07:00:00Z", "03:00 EDT"},
		{"America/New_York", "0 2 * * *", "2025-03-09", "2025-03-09T07:00:00Z", "03:00 EDT"},
		{"America/New_York", "30 1 * * *", "2025-03-09", "2025-03-09T06:30:00Z", "01:30 EST"},
		{"America/New_York", "30 3 * * *", "2025-03-09", "2025-03-09T07:30:00Z", "03:30 EDT"},
		{"Europe/Berlin", "30 2 * * *", "2025-03-30", "2025-03-30T01:00:00Z", "03:00 CEST"},
		{"Europe/Berlin", "30 1 * * *", "2025-03-30", "2025-03-30T00:30:00Z", "01:30 CET"},
		// Fall back: a repeated wall time runs once, at its first (daylight) occurrence.
		{"America/New_York", "30 1 * * *", "2025-11-02", "2025-11-02T05:30:00Z", "01:30 EDT"},
		{"America/New_York", "30 2 * * *", "2025-11-02", "2025-11-02T07:30:00Z", "02:30 EST"},
		{"Europe/Berlin", "30 2 * * *", "2025-10-26", "2025-10-26T00:30:00Z", "02:30 CEST"},
		{"Europe/Berlin", "30 1 * * *", "2025-10-26", "2025-10-25T23:30:00Z", "01:30 CEST"},
		{"Europe/Berlin", "0 3 * * *", "2025-10-26", "2025-10-26T02:00:00Z", "03:00 CET"},
	}
	for _, tt := range tests {
		t.Run(tt.zone+" "+tt.spec+" "+tt.day, func(t *testing.T) {
			s := mustSchedule(t, tt.spec, tt.zone)
			loc := mustZone(t, tt.zone)
			day, _ := time.ParseInLocation("2006-01-02", tt.day, loc)
			got := s.Next(day) // day is local midnight; every wall time here is after it
			if !got.Equal(utc(tt.want)) {
				t.Errorf("Next = %s (%s), want %s", got, got.In(loc).Format("15:04 MST"), tt.want)
			}
			if l := got.In(loc).Format("15:04 MST"); l != tt.wantLocal {
				t.Errorf("local = %s, want %s", l, tt.wantLocal)
			}
		})
	}
}

// TestNextDSTHourly: an hourly schedule on the hour has 23 slots on the
// spring day (02:00 and 03:00 are one slot), 24 on the 25-hour autumn day
// (the repeated hour runs once), and 24 on other days. At half past, the
// spring day keeps 24 slots: 02:30 becomes 03:00, which differs from 03:30.
func TestNextDSTHourly(t *testing.T) {
	for _, tr := range dstTransitions {
		for _, spec := range []string{"0 * * * *", "@hourly", "30 * * * *"} {
			t.Run(tr.zone+"/"+tr.date+"/"+spec, func(t *testing.T) {
				loc := mustZone(t, tr.zone)
				day, _ := time.ParseInLocation("2006-01-02", tr.date, loc)
				s := mustSchedule(t, spec, tr.zone)
				perDay := map[string]int{}
				from, to := day.AddDate(0, 0, -2).Add(-time.Nanosecond), day.AddDate(0, 0, 2).Add(-time.Nanosecond)
				for _, x := range slotsBetween(t, s, from, to) {
					perDay[x.In(loc).Format("2006-01-02")]++
				}
				if len(perDay) != 4 {
					t.Errorf("slots on %d days, want 4", len(perDay))
				}
				for d, n := range perDay {
					want := 24
					if d == tr.date && tr.kind == "spring" && !strings.HasPrefix(spec, "30") {
						want = 23
					}
					if n != want {
						t.Errorf("%s: %d slots, want %d", d, n, want)
					}
				}
			})
		}
	}
}

// TestRobfigNextDST records what robfig/cron's own SpecSchedule.Next does on
// the same transition days (the reason Schedule walks wall-clock fields
// itself). It only logs: the library's quirks are not ours to assert.
func TestRobfigNextDST(t *testing.T) {
	for _, tr := range dstTransitions[:4] {
		for _, w := range []string{"30 1", "30 2"} {
			loc := mustZone(t, tr.zone)
			sched, err := cron.ParseStandard("CRON_TZ=" + tr.zone + " " + w + " * * *")
			if err != nil {
				t.Fatal(err)
			}
			day, _ := time.ParseInLocation("2006-01-02", tr.date, loc)
			n := 0
			var got []string
			for cur := sched.Next(day.Add(-time.Second)); cur.Before(day.AddDate(0, 0, 1)); cur = sched.Next(cur) {
				n++
				got = append(got, cur.In(loc).Format("15:04 MST"))
				if n > 5 {
					break
				}
			}
			ours := slotsBetween(t, mustSchedule(t, w+" * * *", tr.zone), day.Add(-time.Second), day.AddDate(0, 0, 1).Add(-time.Second))
			if len(ours) != 1 {
				t.Errorf("ours: %d slots", len(ours))
			}
			t.Logf("robfig %s %s %s: %d slot(s) %v; ours: %s", tr.zone, tr.date, w, n, got, ours[0].In(loc).Format("15:04 MST"))
		}
	}
}

func TestLatest(t *testing.T) {
	tests := []struct {
		name, spec, zone string
		after, now       string
		want             string // "" = none
	}{
		{"none yet", "0 7 * * *", "", "2025-01-10T07:00:00Z", "2025-01-11T06:59:59Z", ""},
		{"slot at now counts", "0 7 * * *", "", "2025-01-10T07:00:00Z", "2025-01-11T07:00:00Z", "2025-01-11T07:00:00Z"},
		{"after excluded", "0 7 * * *", "", "2025-01-11T07:00:00Z", "2025-01-11T07:00:00Z", ""},
		{"now before after", "0 7 * * *", "", "2025-01-11T07:00:00Z", "2025-01-01T07:00:00Z", ""},
		{"one missed", "0 7 * * *", "", "2025-01-10T07:00:00Z", "2025-01-11T09:00:00Z", "2025-01-11T07:00:00Z"},
		{"week of downtime collapses", "0 7 * * *", "Europe/Berlin", "2025-01-03T06:00:00Z", "2025-01-10T12:00:00Z", "2025-01-10T06:00:00Z"},
		{"downtime across spring forward", "30 2 * * *", "America/New_York", "2025-03-05T07:30:00Z", "2025-03-09T12:00:00Z", "2025-03-09T07:00:00Z"},
		{"downtime ending in repeated hour", "30 1 * * *", "America/New_York", "2025-10-30T05:30:00Z", "2025-11-02T06:45:00Z", "2025-11-02T05:30:00Z"},
		{"twice a day", "twice a day", "UTC", "2025-01-01T07:00:00Z", "2025-01-05T20:00:00Z", "2025-01-05T19:00:00Z"},
		{"weekly over a month", "weekly", "UTC", "2025-01-06T07:00:00Z", "2025-02-05T00:00:00Z", "2025-02-03T07:00:00Z"},
		{"minutely after a month", "* * * * *", "Europe/Berlin", "2025-01-01T00:00:00Z", "2025-02-01T10:20:30Z", "2025-02-01T10:20:00Z"},
		{"every 10s", "@every 10s", "", "2025-01-01T00:00:00Z", "2025-01-01T00:05:07Z", "2025-01-01T00:05:00Z"},
		{"every 10s none", "@every 10s", "", "2025-01-01T00:05:00Z", "2025-01-01T00:05:09Z", ""},
		{"every 10s on slot", "@every 10s", "", "2025-01-01T00:05:00Z", "2025-01-01T00:05:10Z", "2025-01-01T00:05:10Z"},
		{"zero after", "0 7 * * *", "", "0001-01-01T00:00:00Z", "2025-01-01T08:00:00Z", "2025-01-01T07:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustSchedule(t, tt.spec, tt.zone)
			got, ok := s.Latest(utc(tt.after), utc(tt.now))
			if tt.want == "" {
				if ok {
					t.Errorf("Latest = %s, want none", got)
				}
				return
			}
			if !ok || !got.Equal(utc(tt.want)) || got.Location() != time.UTC {
				t.Errorf("Latest = %s, %v; want %s", got, ok, tt.want)
			}
		})
	}
}

// TestNextLatestAgree checks the forward and the backward walk against each
// other at many instants around DST transitions: for n = Next(x), Latest(x,
// n) is n and Latest(x, n−1s) finds nothing.
func TestNextLatestAgree(t *testing.T) {
	specs := []string{"30 2 * * *", "30 1 * * *", "0 * * * *", "*/20 1-3 * * *", "0 7,19 * * *", "0 0 * * 0", "@every 7m"}
	for _, tr := range dstTransitions[:4] {
		loc := mustZone(t, tr.zone)
		day, _ := time.ParseInLocation("2006-01-02", tr.date, loc)
		for _, spec := range specs {
			s := mustSchedule(t, spec, tr.zone)
			for x := day.Add(-30 * time.Hour); x.Before(day.Add(30 * time.Hour)); x = x.Add(17 * time.Minute) {
				n := s.Next(x)
				if !n.After(x) {
					t.Fatalf("%s %s: Next(%s) = %s not after", tr.zone, spec, x, n)
				}
				if got, ok := s.Latest(x, n); !ok || !got.Equal(n) {
					t.Errorf("%s %s: Latest(%s, %s) = %s %v", tr.zone, spec, x, n, got, ok)
				}
				if got, ok := s.Latest(x, n.Add(-time.Second)); ok {
					t.Errorf("%s %s: Latest(%s, %s) = %s, want none", tr.zone, spec, x, n.Add(-time.Second), got)
				}
			}
		}
	}
}

// FuzzParseSchedule: no spec panics the parser (robfig/cron itself panics on
// "TZ=x" without a space, which ParseSchedule refuses first), and every
// accepted schedule has a next slot that Latest agrees with.
func FuzzParseSchedule(f *testing.F) {
	for _, s := range []string{"0 7 * * *", "@every 10s", "TZ=Europe/Berlin", "CRON_TZ=", "*/0 * * * *", "0 0 29 2 *", "@every", "daily", "1-5/2 */3 1,15 jan-dec sun-sat"} {
		f.Add(s, "Europe/Berlin", int64(1735689600))
	}
	f.Fuzz(func(t *testing.T, spec, zone string, unix int64) {
		s, err := ParseSchedule(spec, zone)
		if err != nil {
			if !errors.Is(err, ErrBadSpec) && !errors.Is(err, ErrBadZone) {
				t.Fatalf("error without a sentinel: %v", err)
			}
			return
		}
		after := time.Unix(unix%(200*365*86400), 0) // within ±200 years of 1970
		n := s.Next(after)
		if !n.After(after) {
			t.Fatalf("%s: Next(%s) = %s", s, after, n)
		}
		if l, ok := s.Latest(after, n); !ok || !l.Equal(n) {
			t.Fatalf("%s: Latest(%s, %s) = %s, %v", s, after, n, l, ok)
		}
	})
}
