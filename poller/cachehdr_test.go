package poller

import (
	"net/http"
	"testing"
	"time"
)

// testNow is a fixed "now" for the pure-function tests.
var testNow = time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)

// httpDate formats t the way servers send dates.
func httpDate(t time.Time) string { return t.UTC().Format(http.TimeFormat) }

// hdr builds a header from name/value pairs, keeping repeated names.
func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

func TestFreshness(t *testing.T) {
	date := httpDate(testNow)
	tests := []struct {
		name   string
		h      http.Header
		want   time.Duration
		reason string
		ok     bool
	}{
		{"nil header", nil, 0, "", false},
		{"no caching headers", hdr("Content-Type", "application/rss+xml"), 0, "", false},
		{"max-age", hdr("Cache-Control", "max-age=900"), 15 * time.Minute, "Cache-Control max-age=900", true},
		{"max-age minus Age", hdr("Cache-Control", "public, max-age=900", "Age", "100"), 800 * time.Second, "Cache-Control max-age=900 minus Age 100", true},
		{"Age larger than max-age clamps at 0", hdr("Cache-Control", "max-age=900", "Age", "1000"), 0, "Cache-Control max-age=900 minus Age 1000", true},
		{"Age 0 is not mentioned", hdr("Cache-Control", "max-age=900", "Age", "0"), 15 * time.Minute, "Cache-Control max-age=900", true},
		{"invalid Age ignored", hdr("Cache-Control", "max-age=900", "Age", "soon"), 15 * time.Minute, "Cache-Control max-age=900", true},
		{"max-age=0 is ok with 0", hdr("Cache-Control", "max-age=0"), 0, "Cache-Control max-age=0", true},
		{"max-age above 24 h is not capped here", hdr("Cache-Control", "max-age=172800"), 48 * time.Hour, "Cache-Control max-age=172800", true},
		{"huge max-age saturates at 2^31 s", hdr("Cache-Control", "max-age=99999999999999999999999"), maxDeltaSeconds * time.Second, "Cache-Control max-age=2147483648", true},
		{"max-age wins over Expires", hdr("Cache-Control", "max-age=60", "Date", date, "Expires", httpDate(testNow.Add(2*time.Hour))), time.Minute, "Cache-Control max-age=60", true},
		{"s-maxage ignored", hdr("Cache-Control", "s-maxage=3600"), 0, "", false},
		{"s-maxage ignored next to max-age", hdr("Cache-Control", "s-maxage=3600, max-age=600"), 10 * time.Minute, "Cache-Control max-age=600", true},
		{"s-maxage ignored, Expires used", hdr("Cache-Control", "s-maxage=3600", "Date", date, "Expires", httpDate(testNow.Add(time.Hour))), time.Hour, "Expires − Date = 1 h", true},
		{"uppercase and spaces", hdr("Cache-Control", "  PUBLIC ,MAX-AGE = 900 "), 15 * time.Minute, "Cache-Control max-age=900", true},
		{"quoted value", hdr("Cache-Control", `max-age="900"`), 15 * time.Minute, "Cache-Control max-age=900", true},
		{"semicolon separator", hdr("Cache-Control", "public; max-age=300"), 5 * time.Minute, "Cache-Control max-age=300", true},
		{"empty members", hdr("Cache-Control", ",, ,max-age=120,,"), 2 * time.Minute, "Cache-Control max-age=120", true},
		{"quoted comma does not split", hdr("Cache-Control", `no-cache="Set-Cookie, max-age=5", max-age=700`), 700 * time.Second, "Cache-Control max-age=700", true},
		{"multiple lines, first max-age wins", hdr("Cache-Control", "public", "Cache-Control", "max-age=1200", "Cache-Control", "max-age=60"), 20 * time.Minute, "Cache-Control max-age=1200", true},
		{"non-canonical header name", http.Header{"cache-control": {"max-age=900"}}, 15 * time.Minute, "Cache-Control max-age=900", true},
		{"invalid max-age ignored, Expires used", hdr("Cache-Control", "max-age=abc", "Date", date, "Expires", httpDate(testNow.Add(time.Hour))), time.Hour, "Expires − Date = 1 h", true},
		{"negative max-age ignored", hdr("Cache-Control", "max-age=-5"), 0, "", false},
		{"fractional max-age ignored", hdr("Cache-Control", "max-age=90.5"), 0, "", false},
		{"max-age without value ignored", hdr("Cache-Control", "max-age"), 0, "", false},
		{"no-cache alone gives nothing", hdr("Cache-Control", "no-cache"), 0, "", false},
		{"no-store, no-cache with old Expires gives nothing", hdr("Cache-Control", "no-store, no-cache, must-revalidate", "Expires", "Thu, 19 Nov 1981 08:52:00 GMT", "Date", date), 0, "", false},
		{"no-cache with max-age uses max-age", hdr("Cache-Control", "no-cache, max-age=600"), 10 * time.Minute, "Cache-Control max-age=600", true},
		{"Expires − Date", hdr("Date", date, "Expires", httpDate(testNow.Add(2*time.Hour))), 2 * time.Hour, "Expires − Date = 2 h", true},
		{"Expires − Date minus Age", hdr("Date", date, "Expires", httpDate(testNow.Add(2*time.Hour)), "Age", "600"), 110 * time.Minute, "Expires − Date = 2 h minus Age 600", true},
		{"Expires − Date ignores our clock skew", hdr("Date", httpDate(testNow.Add(-5*time.Hour)), "Expires", httpDate(testNow.Add(-4*time.Hour))), time.Hour, "Expires − Date = 1 h", true},
		{"Expires without Date uses now", hdr("Expires", httpDate(testNow.Add(30*time.Minute))), 30 * time.Minute, "Expires − Date = 30 min", true},
		{"Expires with invalid Date uses now", hdr("Date", "yesterday", "Expires", httpDate(testNow.Add(30*time.Minute))), 30 * time.Minute, "Expires − Date = 30 min", true},
		{"Expires in the past", hdr("Date", date, "Expires", httpDate(testNow.Add(-time.Hour))), 0, "", false},
		{"Expires in the past without Date", hdr("Expires", httpDate(testNow.Add(-time.Second))), 0, "", false},
		{"Expires equal to Date", hdr("Date", date, "Expires", date), 0, "", false},
		{"Expires 0", hdr("Date", date, "Expires", "0"), 0, "", false},
		{"Expires -1", hdr("Date", date, "Expires", "-1"), 0, "", false},
		{"Expires empty", hdr("Date", date, "Expires", ""), 0, "", false},
		{"Expires RFC 850", hdr("Date", date, "Expires", testNow.Add(time.Hour).Format(time.RFC850)), time.Hour, "Expires − Date = 1 h", true},
		{"Expires ANSI C", hdr("Date", date, "Expires", testNow.Add(3*time.Hour).Format(time.ANSIC)), 3 * time.Hour, "Expires − Date = 3 h", true},
		{"Expires lowercase", hdr("Date", date, "Expires", "mon, 02 mar 2026 13:00:00 gmt"), time.Hour, "Expires − Date = 1 h", true},
		{"Expires quoted with extra spaces", hdr("Date", date, "Expires", `"Mon,  02 Mar 2026   13:00:00 GMT"`), time.Hour, "Expires − Date = 1 h", true},
		{"Expires numeric zone", hdr("Date", date, "Expires", "Mon, 02 Mar 2026 14:00:00 +0100"), time.Hour, "Expires − Date = 1 h", true},
		{"Expires far future not capped here", hdr("Date", date, "Expires", httpDate(testNow.AddDate(1, 0, 0))), 365 * 24 * time.Hour, "Expires − Date = 365 days", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, reason, ok := Freshness(tt.h, testNow)
			if d != tt.want || reason != tt.reason || ok != tt.ok {
				t.Errorf("Freshness(%v) = %v, %q, %v; want %v, %q, %v", tt.h, d, reason, ok, tt.want, tt.reason, tt.ok)
			}
		})
	}
}

func TestParseRetryAfter(t *testing.T) {
	tests := []struct {
		name string
		v    string
		want time.Duration
		ok   bool
	}{
		{"seconds", "120", 2 * time.Minute, true},
		{"zero seconds", "0", 0, true},
		{"seconds with spaces", "  90 ", 90 * time.Second, true},
		{"quoted seconds", `"30"`, 30 * time.Second, true},
		{"huge seconds saturate", "99999999999999999999", maxDeltaSeconds * time.Second, true},
		{"negative", "-5", 0, false},
		{"plus sign", "+5", 0, false},
		{"fraction", "1.5", 0, false},
		{"empty", "", 0, false},
		{"blank", "   ", 0, false},
		{"garbage", "soon", 0, false},
		{"IMF-fixdate", httpDate(testNow.Add(2 * time.Hour)), 2 * time.Hour, true},
		{"RFC 850 date", testNow.Add(time.Hour).Format(time.RFC850), time.Hour, true},
		{"ANSI C date", testNow.Add(10 * time.Minute).Format(time.ANSIC), 10 * time.Minute, true},
		{"uppercase date", "MON, 02 MAR 2026 12:30:00 GMT", 30 * time.Minute, true},
		{"date in the past", httpDate(testNow.Add(-time.Hour)), 0, true},
		{"date equal to now", httpDate(testNow), 0, true},
		{"date without zone", "Mon, 02 Mar 2026 12:30:00", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, ok := ParseRetryAfter(tt.v, testNow)
			if d != tt.want || ok != tt.ok {
				t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", tt.v, d, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestSplitDirectives(t *testing.T) {
	tests := []struct {
		line string
		want []string
	}{
		{"", nil},
		{"a, b", []string{"a", "b"}},
		{`a="x, y", b`, []string{`a="x, y"`, "b"}},
		{`a="x\", y", b`, []string{`a="x\", y"`, "b"}},
		{"a;b ,c", []string{"a", "b", "c"}},
		{`a="unterminated, b`, []string{`a="unterminated, b`}},
	}
	for _, tt := range tests {
		got := splitDirectives(tt.line)
		if len(got) != len(tt.want) {
			t.Errorf("splitDirectives(%q) = %q; want %q", tt.line, got, tt.want)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("splitDirectives(%q) = %q; want %q", tt.line, got, tt.want)
				break
			}
		}
	}
}
