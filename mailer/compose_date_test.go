package mailer

import (
	"strings"
	"testing"
	"time"
)

func TestFormatDate(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	late := time.Date(2026, 11, 26, 23, 40, 0, 0, time.UTC)
	tests := []struct {
		name string
		t    time.Time
		loc  *time.Location
		want string
	}{
		{"zero", time.Time{}, paris, ""},
		{"UTC without a zone", late, nil, "November 26, 2026"},
		{"next day in Paris", late, paris, "November 27, 2026"},
		{"same day in New York", late, ny, "November 26, 2026"},
		{"given in another zone", late.In(ny), paris, "November 27, 2026"},
		{"day without a time stays that day", time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC), ny, "November 26, 2026"},
		{"early morning UTC is the evening before in New York", time.Date(2026, 11, 26, 2, 0, 0, 0, time.UTC), ny, "November 25, 2026"},
	}
	for _, tc := range tests {
		if got := formatDate(tc.t, tc.loc); got != tc.want {
			t.Errorf("%s: formatDate(%v, %v) = %q, want %q", tc.name, tc.t, tc.loc, got, tc.want)
		}
	}
}

// TestItemDateInReadersZone: the byline of an instant email dates the post
// on the reader's calendar.
func TestItemDateInReadersZone(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	e := testItem()
	e.Published = time.Date(2026, 11, 26, 23, 40, 0, 0, time.UTC)
	for _, tc := range []struct {
		loc  *time.Location
		want string
	}{{nil, "November 26, 2026"}, {paris, "November 27, 2026"}} {
		e.Location = tc.loc
		m, err := testSender().Item(e)
		if err != nil {
			t.Fatal(err)
		}
		p := renderParse(t, m)
		if !strings.Contains(p.text, "· "+tc.want) || !strings.Contains(p.html, "· "+tc.want) {
			t.Errorf("zone %v: want the post dated %s:\n%s", tc.loc, tc.want, p.text)
		}
	}
}
