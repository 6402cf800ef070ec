package billing

import (
	"math"
	"testing"
	"time"
)

func TestLowLine(t *testing.T) {
	cases := []struct {
		name   string
		perDay float64
		want   int64
	}{
		{"spends nothing", 0, 0},
		{"one a day", 1, 14},
		{"a post a week", 1.0 / 7, 2},
		{"rounds up", 0.5, 7},
		{"a little", 0.01, 1},
		{"busy", 100, 1400},
		{"negative", -1, 0},
		{"NaN", math.NaN(), 0},
		{"infinite", math.Inf(1), 0},
		{"huge", 1e300, MaxPackCredits},
	}
	for _, c := range cases {
		if got := LowLine(c.perDay); got != c.want {
			t.Errorf("%s: LowLine(%v) = %d, want %d", c.name, c.perDay, got, c.want)
		}
	}
}

func TestLowLineRecheck(t *testing.T) {
	day := 24 * time.Hour
	cases := []struct {
		name          string
		balance, line int64
		perDay        float64
		unknown       int
		want          time.Duration
	}{
		{"spends nothing", 500, 0, 0, 0, MaxLowRecheck},
		{"below the line", 10, 14, 1, 0, MinLowRecheck},
		{"at the line", 14, 14, 1, 0, MinLowRecheck},
		{"four days above", 18, 14, 1, 0, 2 * day},
		{"one day above", 15, 14, 1, 0, MinLowRecheck},
		{"months above", 500, 14, 1, 0, MaxLowRecheck},
		{"huge balance", math.MaxInt64, 14, 1e-9, 0, MaxLowRecheck},
		{"a feed without history", 500, 0, 0, 1, MinLowRecheck},
		{"months above, a new feed", 500, 14, 1, 2, MinLowRecheck},
	}
	for _, c := range cases {
		if got := LowLineRecheck(c.balance, c.line, c.perDay, c.unknown); got != c.want {
			t.Errorf("%s: LowLineRecheck(%d, %d, %v, %d) = %v, want %v", c.name, c.balance, c.line, c.perDay, c.unknown, got, c.want)
		}
	}
}

func TestLowAndReceiptKeys(t *testing.T) {
	if k := KeyLowNotice(42, 7); k != "lowcredits:42:7" {
		t.Errorf("KeyLowNotice = %q", k)
	}
	if KeyLowNotice(42, 7) == KeyCreditsNotice(42, 7) {
		t.Error("running-low and out-of-credits notices share a key")
	}
	if k := KeyReceipt("cs_test_1"); k != "receipt:cs_test_1" {
		t.Errorf("KeyReceipt = %q", k)
	}
	if k := KeyReceipt("a:b"); k != "receipt:a%3Ab" {
		t.Errorf("KeyReceipt escapes to %q", k)
	}
}

func TestCreditWords(t *testing.T) {
	cases := []struct{ got, want string }{
		{FormatCredits(1), "1 credit"},
		{FormatCredits(0), "0 credits"},
		{FormatCredits(5000), "5,000 credits"},
		{FormatCredits(-3), "-3 credits"},
		{FormatCredits(-1234567), "-1,234,567 credits"},
		{LowDaysWords(7, 14), "about 7 days"},
		{LowDaysWords(1, 14), "about 1 day"},
		{LowDaysWords(0, 14), "less than a day"},
		{LowDaysWords(10, 1400), "less than a day"},
		{LowDaysWords(10, 0), ""},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestSpreadRecheck(t *testing.T) {
	week := MaxLowRecheck
	cases := []struct {
		name string
		user int64
		d    time.Duration
	}{
		{"first reader, a week", 1, week},
		{"next reader, a week", 2, week},
		{"large id, a day", 1 << 40, MinLowRecheck},
		{"zero interval stays zero", 7, 0},
	}
	for _, c := range cases {
		got := SpreadRecheck(c.user, c.d)
		low := c.d - time.Duration(RecheckSpread*float64(c.d))
		if got > c.d || got < low {
			t.Errorf("%s: SpreadRecheck(%d, %v) = %v, want within [%v, %v]", c.name, c.user, c.d, got, low, c.d)
		}
		if again := SpreadRecheck(c.user, c.d); again != got {
			t.Errorf("%s: not the same twice: %v then %v", c.name, got, again)
		}
	}

	// 10,000 readers whose lines were computed in the same minute come
	// due over most of a quarter of the interval, no hour holding more
	// than twice its even share.
	const n = 10000
	perHour := map[time.Duration]int{}
	lo, hi := week, time.Duration(0)
	for id := int64(1); id <= n; id++ {
		d := SpreadRecheck(id, week)
		lo, hi = min(lo, d), max(hi, d)
		perHour[d.Truncate(time.Hour)]++
	}
	if span, want := hi-lo, time.Duration(0.9*RecheckSpread*float64(week)); span < want {
		t.Errorf("%d readers come due over %v, want at least %v", n, span, want)
	}
	even := float64(n) / (RecheckSpread * week.Hours())
	for h, k := range perHour {
		if float64(k) > 2*even {
			t.Errorf("hour %v holds %d readers, want at most %.0f (twice %0.f)", h, k, 2*even, even)
		}
	}
}
