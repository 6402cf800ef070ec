package billing

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestParsePacks(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		want   []Pack
		errHas string // non-empty: want ErrBadPacks mentioning this
	}{
		{name: "default", in: DefaultPacksSpec, want: DefaultPacks()},
		{name: "spaces", in: " 5000 : 500 , 100000:5000 ", want: DefaultPacks()},
		{name: "sorted", in: "100000:5000,5000:500", want: DefaultPacks()},
		{name: "underscores", in: "100_000:5_000", want: []Pack{{100000, 5000}}},
		{name: "single", in: "1:1", want: []Pack{{1, 1}}},
		{name: "limits", in: "1000000000:100000000", want: []Pack{{MaxPackCredits, MaxPackPriceCents}}},

		{name: "empty", in: "", errHas: "empty"},
		{name: "blank", in: "   ", errHas: "empty"},
		{name: "empty entry", in: "5000:500,", errHas: "entry 2 is empty"},
		{name: "no colon", in: "5000", errHas: "want credits:cents"},
		{name: "no credits", in: ":500", errHas: "credits missing"},
		{name: "no price", in: "5000:", errHas: "price missing"},
		{name: "zero credits", in: "0:500", errHas: "must be positive"},
		{name: "zero price", in: "5000:0", errHas: "must be positive"},
		{name: "negative", in: "5000:-500", errHas: "must be positive"},
		{name: "plus sign", in: "+5000:500", errHas: "not a whole number"},
		{name: "decimal price", in: "5000:5.00", errHas: "not a whole number"},
		{name: "letters", in: "lots:500", errHas: "not a whole number"},
		{name: "two colons", in: "5000:500:1", errHas: "not a whole number"},
		{name: "bad underscore", in: "_5000:500", errHas: "not a whole number"},
		{name: "too many credits", in: "1000000001:500", errHas: "above the limit"},
		{name: "too expensive", in: "5000:100000001", errHas: "above the limit"},
		{name: "overflow", in: "99999999999999999999:5", errHas: "not a whole number"},
		{name: "duplicate", in: "5000:500,5000:400", errHas: "already listed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParsePacks(tt.in)
			if tt.errHas != "" {
				if !errors.Is(err, ErrBadPacks) || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("err = %v, want ErrBadPacks mentioning %q", err, tt.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestDefaultPacksBulkIsHalfPrice(t *testing.T) {
	ps := DefaultPacks()
	if len(ps) != 2 {
		t.Fatalf("DefaultPacks() = %v", ps)
	}
	small, bulk := ps[0].CentsPerThousand(), ps[1].CentsPerThousand()
	if small != 100 || bulk != 50 {
		t.Errorf("cents per 1000: %v and %v, want 100 and 50", small, bulk)
	}
	ps[0].Credits = 1
	if DefaultPacks()[0].Credits != 5000 {
		t.Error("DefaultPacks shares its backing array")
	}
}

func TestCentsPerThousand(t *testing.T) {
	tests := []struct {
		p    Pack
		want float64
	}{
		{Pack{5000, 500}, 100},
		{Pack{100000, 5000}, 50},
		{Pack{3000, 100}, 100.0 / 3},
		{Pack{1000, 1}, 1},
		{Pack{0, 100}, 0},
	}
	for _, tt := range tests {
		if got := tt.p.CentsPerThousand(); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("%v.CentsPerThousand() = %v, want %v", tt.p, got, tt.want)
		}
	}
	if s := (Pack{5000, 500}).String(); s != "5000 credits for 500" {
		t.Errorf("String() = %q", s)
	}
}

func TestFormatPrice(t *testing.T) {
	tests := []struct {
		cents int64
		cur   string
		want  string
	}{
		{500, "USD", "$5.00"},
		{500, "usd", "$5.00"},
		{500, "", "$5.00"},
		{5, "USD", "$0.05"},
		{0, "USD", "$0.00"},
		{99, "GBP", "£0.99"},
		{123450, "EUR", "€1,234.50"},
		{100000000, "EUR", "€1,000,000.00"},
		{-100, "USD", "-$1.00"},
		{500, "JPY", "¥500"},
		{1234567, "jpy", "¥1,234,567"},
		{1000, "KRW", "1,000 KRW"},
		{1200, "CHF", "12.00 CHF"},
		{100, "INR", "₹1.00"},
		{math.MaxInt64, "USD", "$92,233,720,368,547,758.07"},
		{math.MinInt64, "USD", "-$92,233,720,368,547,758.08"},
	}
	for _, tt := range tests {
		if got := FormatPrice(tt.cents, tt.cur); got != tt.want {
			t.Errorf("FormatPrice(%d, %q) = %q, want %q", tt.cents, tt.cur, got, tt.want)
		}
	}
}
