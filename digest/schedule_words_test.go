package digest

import (
	"errors"
	"testing"
)

func TestSpecFromWords(t *testing.T) {
	cases := []struct {
		in      string
		want    string // "" with ok false: not such a phrase
		wantErr bool
	}{
		{"daily at 07:00", "0 7 * * *", false},
		{"daily at 08:00", "0 8 * * *", false},
		{"daily at 7:00", "0 7 * * *", false},
		{"Daily at  7:30", "30 7 * * *", false},
		{"every day at 18:45", "45 18 * * *", false},
		{"daily at 6pm", "0 18 * * *", false},
		{"daily at 12am", "0 0 * * *", false},
		{"daily at 12:15 pm", "15 12 * * *", false},
		{"daily at 8", "0 8 * * *", false},
		{"weekly on Monday at 07:00", "0 7 * * 1", false},
		{"weekly on friday at 17:30", "30 17 * * 5", false},
		{"weekly on sun at 9:00", "0 9 * * 0", false},
		{"weekly at 9:00", "0 9 * * 1", false},
		{"twice a day at 8:00 and 20:00", "0 8,20 * * *", false},
		{"twice a day at 21:30 and 9:30", "30 9,21 * * *", false},
		{"daily at 25:00", "", true},
		{"daily at 7:60", "", true},
		{"daily at 13pm", "", true},
		{"weekly on someday at 7:00", "", true},
		{"twice a day at 8:00 and 20:15", "", true},
		{"twice a day at 8:00 and 8:00", "", true},
		{"0 7 * * *", "", false},
		{"@daily", "", false},
		{"daily", "", false},
		{"twice a day", "", false},
	}
	for _, c := range cases {
		got, ok, err := specFromWords(c.in)
		if c.wantErr {
			if err == nil || !errors.Is(err, ErrBadSpec) || !ok {
				t.Errorf("%q: %q ok=%v err=%v; want an ErrBadSpec", c.in, got, ok, err)
			}
			continue
		}
		if err != nil || got != c.want || ok != (c.want != "") {
			t.Errorf("%q: %q ok=%v err=%v; want %q", c.in, got, ok, err, c.want)
		}
	}
	// ParseSchedule takes the words; "expected exactly 5 fields" is gone.
	for _, in := range []string{"daily at 08:00", "daily at 7:00", "weekly on Friday at 17:30"} {
		if _, err := ParseSchedule(in, "Europe/Berlin"); err != nil {
			t.Errorf("ParseSchedule(%q): %v", in, err)
		}
	}
}
