package digest

import (
	"errors"
	"fmt"
	"strings"
	"time"

	// The binary must resolve IANA zone names without the host's zoneinfo.
	_ "time/tzdata"

	"github.com/robfig/cron/v3"
)

// Errors returned by ParseSchedule. Test with errors.Is; the wrapped message
// carries the parser's or the zone database's reason.
var (
	// ErrBadSpec: the schedule spec is not a 5-field cron spec, a descriptor,
	// an "@every D" with D ≥ MinEvery, or a preset key/label; or it can never fire.
	ErrBadSpec = errors.New("invalid digest schedule")
	// ErrBadZone: the time zone is not a known IANA zone name.
	ErrBadZone = errors.New("unknown time zone")
)

// MinEvery is the shortest interval "@every D" accepts (for tests and demos).
const MinEvery = 10 * time.Second

// scheduleSearchYears bounds the search for the next or previous slot. Eight
// years is the longest gap between two slots of any valid spec (Feb 29 across
// a non-leap century year, e.g. 2096 → 2104); one more year for safety.
const scheduleSearchYears = 9

// Preset is a schedule the web offers by name.
type Preset struct {
	Key   string // stable identifier for forms and the CLI, e.g. "daily"
	Label string // human wording, e.g. "daily at 07:00"
	Spec  string // the cron spec it stands for
}

// Presets returns the schedules the web offers, in display order. It returns
// a fresh slice on every call, so callers may modify it.
//
// Note that the preset key "daily" (07:00) differs from the cron descriptor
// "@daily" (midnight); the leading "@" tells them apart.
func Presets() []Preset {
	return []Preset{
		{Key: "daily", Label: "daily at 07:00", Spec: "0 7 * * *"},
		{Key: "weekly", Label: "weekly on Monday at 07:00", Spec: "0 7 * * 1"},
		{Key: "twice-daily", Label: "twice a day", Spec: "0 7,19 * * *"},
	}
}

// Schedule is a parsed digest schedule in a person's time zone. Its slots are
// instants; Next and Latest return them in UTC. A Schedule is immutable and
// safe for concurrent use. Cron slots are wall-clock times: a time skipped
// by a spring-forward change runs when the gap ends, a time repeated by a
// fall-back change runs once, at its first occurrence. "@every D" slots
// ignore the zone: they are the multiples of D counted from Go's zero time
// in UTC, so every process agrees on them.
type Schedule struct {
	spec  string
	loc   *time.Location
	cron  *cron.SpecSchedule // nil for @every
	every time.Duration
}

// scheduleParser accepts the standard 5 fields and descriptors.
var scheduleParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseSchedule parses spec in the IANA time zone zone ("" means UTC).
//
// spec is one of: a standard 5-field cron spec ("0 7 * * 1-5"); a descriptor
// (@yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly; case
// does not matter); "@every D" with a Go duration D ≥ MinEvery (sub-second
// parts are dropped); a preset's Key or Label (case-insensitive); or a
// preset's words with another time ("daily at 8:00", specFromWords). A
// "TZ=" or "CRON_TZ=" prefix is refused: the zone has its own argument.
// Specs that can never fire ("0 0 30 2 *") are refused.
func ParseSchedule(spec, zone string) (*Schedule, error) {
	loc, err := loadZone(zone)
	if err != nil {
		return nil, err
	}
	spec = strings.Join(strings.Fields(spec), " ")
	if spec == "" {
		return nil, fmt.Errorf("%w: empty spec", ErrBadSpec)
	}
	for _, p := range Presets() {
		if strings.EqualFold(spec, p.Key) || strings.EqualFold(spec, p.Label) {
			spec = p.Spec
			break
		}
	}
	if c, ok, err := specFromWords(spec); err != nil {
		return nil, err
	} else if ok {
		spec = c
	}
	upper := strings.ToUpper(spec)
	if strings.HasPrefix(upper, "TZ=") || strings.HasPrefix(upper, "CRON_TZ=") {
		return nil, fmt.Errorf("%w: %q: give the time zone separately, not as a prefix", ErrBadSpec, spec)
	}
	if strings.HasPrefix(spec, "@") {
		spec = strings.ToLower(spec)
	}
	parsed, err := scheduleParser.Parse(spec)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrBadSpec, spec, err)
	}
	s := &Schedule{spec: spec, loc: loc}
	switch p := parsed.(type) {
	case cron.ConstantDelaySchedule:
		// robfig/cron drops sub-second parts and raises anything below 1 s
		// (including negative durations) to 1 s; check what it kept.
		if p.Delay < MinEvery {
			return nil, fmt.Errorf("%w: %q: %w", ErrBadSpec, spec, errTooFrequent)
		}
		s.every = p.Delay
	case *cron.SpecSchedule:
		if !cronCanFire(p) {
			return nil, fmt.Errorf("%w: %q: %w", ErrBadSpec, spec, errNeverFires)
		}
		c := *p
		c.Location = loc
		s.cron = &c
	default:
		return nil, fmt.Errorf("%w: %q: unsupported schedule type %T", ErrBadSpec, spec, parsed)
	}
	return s, nil
}

var (
	errTooFrequent = fmt.Errorf("interval must be at least %s", MinEvery)
	errNeverFires  = errors.New("no such day (it never fires)")
)

// ScheduleProblem is what is wrong with a schedule ParseSchedule refused,
// in words for the person who typed it: the web form and `feedmail digest
// set` both show it, so an unknown spec lists the forms that are accepted.
func ScheduleProblem(err error) string {
	var we wordsError
	switch {
	case errors.As(err, &we):
		return string(we)
	case errors.Is(err, errTooFrequent):
		return "that is too often: the interval must be at least " + MinEvery.String()
	case errors.Is(err, errNeverFires):
		return "that schedule never comes round (no such day, like 30 February)"
	case errors.Is(err, ErrBadZone):
		return "pick a time zone from the list"
	}
	return "not a schedule feedmail understands: use words like “daily at 8:00” or “weekly on Friday at 17:30”, " +
		"5 cron fields like “0 7 * * 1-5”, @daily, @weekly or @every 2h"
}

func loadZone(zone string) (*time.Location, error) {
	zone = strings.TrimSpace(zone)
	if zone == "" || zone == "UTC" {
		return time.UTC, nil
	}
	// time.LoadLocation("Local") would give the host's zone: never wanted.
	if strings.EqualFold(zone, "local") {
		return nil, fmt.Errorf("%w: %q", ErrBadZone, zone)
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		// LoadLocation's error repeats "unknown time zone" and the name.
		return nil, fmt.Errorf("%w: %q", ErrBadZone, zone)
	}
	return loc, nil
}

// Spec returns the cron spec or descriptor the schedule was parsed from, with
// a preset resolved to its spec and descriptors in lower case.
func (s *Schedule) Spec() string { return s.spec }

// Location returns the schedule's time zone (UTC when none was given).
func (s *Schedule) Location() *time.Location { return s.loc }

// String returns the spec and the zone, e.g. "0 7 * * * (Europe/Berlin)".
func (s *Schedule) String() string { return s.spec + " (" + s.loc.String() + ")" }

// Next returns the first slot strictly after after, in UTC. It returns the
// zero time only if no slot exists within nine years (cannot happen for a
// schedule ParseSchedule accepted).
func (s *Schedule) Next(after time.Time) time.Time {
	if s.cron == nil {
		return after.Truncate(s.every).Add(s.every).UTC()
	}
	return s.cronNext(after)
}

// Latest returns the newest slot in (after, now]. ok is false when there is
// none. Slots missed during downtime collapse into this one: a caller that
// issues at Latest and remembers it as the next call's after sends one issue
// however many slots it slept through.
func (s *Schedule) Latest(after, now time.Time) (slot time.Time, ok bool) {
	if !now.After(after) {
		return time.Time{}, false
	}
	var p time.Time
	if s.cron == nil {
		p = now.Truncate(s.every)
	} else {
		p = s.cronAtOrBefore(now)
	}
	if p.IsZero() || !p.After(after) {
		return time.Time{}, false
	}
	return p.UTC(), true
}

// cronCanFire reports whether some calendar day satisfies the day-of-month,
// month and day-of-week fields. Only a restricted day-of-month with an
// unrestricted day-of-week can miss (cron ORs two restricted day fields).
func cronCanFire(c *cron.SpecSchedule) bool {
	// A field that allows no value at all (robfig accepts "," as an empty
	// list) can never match.
	for _, f := range []uint64{c.Second, c.Minute, c.Hour, c.Dom, c.Month, c.Dow} {
		if f&^cronStarBit == 0 {
			return false
		}
	}
	if c.Dom&cronStarBit != 0 || c.Dow&cronStarBit == 0 {
		return true
	}
	for m := time.January; m <= time.December; m++ {
		if c.Month&(1<<uint(m)) == 0 {
			continue
		}
		days := 31
		switch m {
		case time.February:
			days = 29
		case time.April, time.June, time.September, time.November:
			days = 30
		}
		for d := 1; d <= days; d++ {
			if c.Dom&(1<<uint(d)) != 0 {
				return true
			}
		}
	}
	return false
}

// cronStarBit is robfig/cron's marker for a field written as "*" (unexported
// there); it decides whether day-of-month and day-of-week are ANDed or ORed.
const cronStarBit = 1 << 63

// cronDayMatches applies cron's day rules to a calendar date (day is a
// midnight in UTC used only for its Y-M-D and weekday).
func (s *Schedule) cronDayMatches(day time.Time) bool {
	c := s.cron
	if c.Month&(1<<uint(day.Month())) == 0 {
		return false
	}
	domMatch := c.Dom&(1<<uint(day.Day())) != 0
	dowMatch := c.Dow&(1<<uint(day.Weekday())) != 0
	if c.Dom&cronStarBit != 0 || c.Dow&cronStarBit != 0 {
		return domMatch && dowMatch
	}
	return domMatch || dowMatch
}

// cronNext walks the person's calendar forward from the day before after's
// local date. robfig/cron's own SpecSchedule.Next does its arithmetic on
// instants (adding hours to a local time), which around DST transitions
// fires a fall-back slot twice or skips a spring-forward slot entirely; this
// walks wall-clock fields and maps each wall time to an instant with
// wallInstant. Because wallInstant is monotonic in wall time, a whole day,
// hour or minute whose last second maps to an instant ≤ after is skipped.
func (s *Schedule) cronNext(after time.Time) time.Time {
	c := s.cron
	y, m, d := after.In(s.loc).Date()
	day := time.Date(y, m, d-1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < scheduleSearchYears*366; i, day = i+1, day.AddDate(0, 0, 1) {
		if !s.cronDayMatches(day) || !s.wallInstant(day, 23, 59, 59).After(after) {
			continue
		}
		for h := 0; h < 24; h++ {
			if c.Hour&(1<<uint(h)) == 0 || !s.wallInstant(day, h, 59, 59).After(after) {
				continue
			}
			for mi := 0; mi < 60; mi++ {
				if c.Minute&(1<<uint(mi)) == 0 || !s.wallInstant(day, h, mi, 59).After(after) {
					continue
				}
				for sec := 0; sec < 60; sec++ {
					if c.Second&(1<<uint(sec)) == 0 {
						continue
					}
					if t := s.wallInstant(day, h, mi, sec); t.After(after) {
						return t.UTC()
					}
				}
			}
		}
	}
	return time.Time{}
}

// cronAtOrBefore returns the newest slot ≤ t (zero if none within the search
// bound), walking the calendar backwards from the day after t's local date.
func (s *Schedule) cronAtOrBefore(t time.Time) time.Time {
	c := s.cron
	y, m, d := t.In(s.loc).Date()
	day := time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < scheduleSearchYears*366; i, day = i+1, day.AddDate(0, 0, -1) {
		if !s.cronDayMatches(day) || s.wallInstant(day, 0, 0, 0).After(t) {
			continue
		}
		for h := 23; h >= 0; h-- {
			if c.Hour&(1<<uint(h)) == 0 || s.wallInstant(day, h, 0, 0).After(t) {
				continue
			}
			for mi := 59; mi >= 0; mi-- {
				if c.Minute&(1<<uint(mi)) == 0 || s.wallInstant(day, h, mi, 0).After(t) {
					continue
				}
				for sec := 59; sec >= 0; sec-- {
					if c.Second&(1<<uint(sec)) == 0 {
						continue
					}
					if x := s.wallInstant(day, h, mi, sec); !x.After(t) {
						return x.UTC()
					}
				}
			}
		}
	}
	return time.Time{}
}

// wallInstant maps the wall-clock time h:mi:sec on the calendar date of day
// in the schedule's zone to the instant the slot happens:
//   - an existing, unambiguous wall time: that instant;
//   - a repeated wall time (fall back): its first occurrence;
//   - a skipped wall time (spring forward): the instant the gap ends.
//
// The mapping is monotonic: a later wall time never maps to an earlier instant.
func (s *Schedule) wallInstant(day time.Time, h, mi, sec int) time.Time {
	y, m, d := day.Date()
	nominal := time.Date(y, m, d, h, mi, sec, 0, time.UTC) // wall time read as UTC
	var (
		best    time.Time
		found   bool
		offBack int // the offset in effect well before the wall time
	)
	// A transition changes the offset; the offsets in effect 36 h either
	// side of the wall time and at it cover every candidate.
	for i, probe := range [...]time.Time{nominal.Add(-36 * time.Hour), nominal, nominal.Add(36 * time.Hour)} {
		_, off := probe.In(s.loc).Zone()
		if i == 0 {
			offBack = off
		}
		inst := nominal.Add(-time.Duration(off) * time.Second)
		if sameWall(inst.In(s.loc), y, m, d, h, mi, sec) && (!found || inst.Before(best)) {
			best, found = inst, true
		}
	}
	if found {
		return best
	}
	// Skipped: read with the earlier offset, the wall time lands just after
	// the transition, inside the new zone period; that period's start is the
	// end of the gap.
	inst := nominal.Add(-time.Duration(offBack) * time.Second)
	if start, _ := inst.In(s.loc).ZoneBounds(); !start.IsZero() && !start.After(inst) {
		return start
	}
	return inst
}

func sameWall(t time.Time, y int, m time.Month, d, h, mi, sec int) bool {
	ty, tm, td := t.Date()
	th, tmi, tsec := t.Clock()
	return ty == y && tm == m && td == d && th == h && tmi == mi && tsec == sec
}
