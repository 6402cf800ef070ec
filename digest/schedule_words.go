package digest

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// The presets' words with any time: "daily at 08:00", "daily at 7:00",
// "daily at 6pm", "weekly on Friday at 17:30", "weekly at 9:00" (Monday),
// "twice a day at 8:00 and 20:00". specFromWords turns them into the cron
// spec ParseSchedule reads; the presets' own labels are these words with
// 07:00 (and 19:00).

var (
	wordsTime   = `(\d{1,2})(?::(\d{2}))?\s*(am|pm)?`
	wordsDaily  = regexp.MustCompile(`^(?:daily|every day) at ` + wordsTime + `$`)
	wordsWeekly = regexp.MustCompile(`^weekly(?: on ([a-z]+))? at ` + wordsTime + `$`)
	wordsTwice  = regexp.MustCompile(`^twice a day at ` + wordsTime + ` and ` + wordsTime + `$`)
)

// weekdays are the cron day numbers of the days' names and their
// three-letter forms.
var weekdays = map[string]int{"sunday": 0, "monday": 1, "tuesday": 2, "wednesday": 3, "thursday": 4, "friday": 5, "saturday": 6,
	"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}

// wordsError is what is wrong with a schedule in words that names an
// impossible time or day; ScheduleProblem shows it as it is.
type wordsError string

func (e wordsError) Error() string { return string(e) }

// specFromWords returns the cron spec of spec when it is one of the
// presets' phrasings with a time of the person's choosing, ok false when it
// is not such a phrase, and an error when it is one with an impossible time
// or day ("daily at 25:00").
func specFromWords(spec string) (cronSpec string, ok bool, err error) {
	s := strings.ToLower(strings.Join(strings.Fields(spec), " "))
	if m := wordsDaily.FindStringSubmatch(s); m != nil {
		h, mi, err := clockTime(m[1], m[2], m[3])
		return fmt.Sprintf("%d %d * * *", mi, h), true, err
	}
	if m := wordsWeekly.FindStringSubmatch(s); m != nil {
		day := 1
		if m[1] != "" {
			d, known := weekdays[m[1]]
			if !known {
				return "", true, fmt.Errorf("%w: %q: %w", ErrBadSpec, spec, wordsError(strconv.Quote(m[1])+" is not a day of the week"))
			}
			day = d
		}
		h, mi, err := clockTime(m[2], m[3], m[4])
		return fmt.Sprintf("%d %d * * %d", mi, h, day), true, err
	}
	if m := wordsTwice.FindStringSubmatch(s); m != nil {
		h1, m1, err1 := clockTime(m[1], m[2], m[3])
		h2, m2, err2 := clockTime(m[4], m[5], m[6])
		switch {
		case err1 != nil:
			return "", true, err1
		case err2 != nil:
			return "", true, err2
		case m1 != m2:
			return "", true, fmt.Errorf("%w: %q: %w", ErrBadSpec, spec, wordsError("twice a day needs both times on the same minute of the hour"))
		case h1 == h2:
			return "", true, fmt.Errorf("%w: %q: %w", ErrBadSpec, spec, wordsError("the two times are the same"))
		}
		return fmt.Sprintf("%d %d,%d * * *", m1, min(h1, h2), max(h1, h2)), true, nil
	}
	return "", false, nil
}

// clockTime reads "7", "07:30", "6" + "pm" into an hour and a minute.
func clockTime(hour, minute, ampm string) (int, int, error) {
	h, _ := strconv.Atoi(hour)
	m := 0
	if minute != "" {
		m, _ = strconv.Atoi(minute)
	}
	switch ampm {
	case "am", "pm":
		if h < 1 || h > 12 {
			return 0, 0, fmt.Errorf("%w: %w", ErrBadSpec, wordsError(hour+ampm+" is not a time"))
		}
		h %= 12
		if ampm == "pm" {
			h += 12
		}
	}
	if h > 23 || m > 59 {
		return 0, 0, fmt.Errorf("%w: %w", ErrBadSpec, wordsError(fmt.Sprintf("%s:%02d is not a time of day (00:00 to 23:59)", hour, m)))
	}
	return h, m, nil
}
