package digest

import (
	"testing"
	"time"
)

// TestParseScheduleRefusesEmptyFields: a cron field that is only commas
// ("," or ",,") is an empty set to robfig/cron (it splits with
// strings.FieldsFunc, which drops empty parts, and reports no error), so a
// spec with such a minute, hour, month or weekday field can never fire.
// ParseSchedule must refuse it like "0 0 30 2 *". Before 4a0c64a it
// accepted it and Next returned the zero time, so a digest saved with such
// a schedule got the zero time as its next slot (found by
// FuzzParseSchedule, input kept in
// testdata/fuzz/FuzzParseSchedule/943ac511776bae4c: ", 0 1 jAn sun").
func TestParseScheduleRefusesEmptyFields(t *testing.T) {
	after := time.Date(2024, 12, 31, 23, 59, 54, 0, time.UTC)
	for _, spec := range []string{
		", 0 1 jan sun", // the fuzzer's input, minute field empty
		", 0 1 jan *",
		",, 7 * * *",
		"0 , * * *",   // hour
		"0 7 * , mon", // month, with a weekday so the day check passes
		"0 7 * * ,",   // weekday, with day-of-month "*"
	} {
		s, err := ParseSchedule(spec, "UTC")
		if err != nil {
			continue
		}
		t.Errorf("%q accepted; Next(%s) = %s", spec, after, s.Next(after))
	}
}
