package billing

import (
	"math"
	"testing"
)

func TestDigestCharge(t *testing.T) {
	tests := []struct {
		feeds, want int
	}{
		{0, 0}, {-3, 0}, {1, 1}, {2, 1}, {3, 1}, {4, 1}, {5, 1}, {6, 2}, {10, 2},
		{11, 3}, {14, 3}, {15, 3}, {16, 4}, {100, 20}, {101, 21},
		{math.MaxInt, math.MaxInt/5 + 1}, // no overflow near the top
	}
	p := Prices{PerPost: 1, FeedsPerDigestCredit: 5}
	for _, tt := range tests {
		if got := p.DigestCharge(tt.feeds); got != tt.want {
			t.Errorf("DigestCharge(%d) = %d, want %d", tt.feeds, got, tt.want)
		}
	}
	if DigestCharge(6) != Standard().DigestCharge(6) {
		t.Error("DigestCharge is not Standard's")
	}
	one := Prices{FeedsPerDigestCredit: 1}
	if one.DigestCharge(7) != 7 || (Prices{}).DigestCharge(7) != 7 {
		t.Error("one credit per feed")
	}
}

func TestPriceWords(t *testing.T) {
	tests := []struct {
		p            Prices
		post, digest string
	}{
		{Prices{PerPost: 1, FeedsPerDigestCredit: 5}, "1 credit", "1 credit per 5 feeds"},
		{Prices{PerPost: 2, FeedsPerDigestCredit: 7}, "2 credits", "1 credit per 7 feeds"},
		{Prices{PerPost: 1, FeedsPerDigestCredit: 1}, "1 credit", "1 credit per feed"},
	}
	for _, tt := range tests {
		if got := tt.p.PostCost(); got != tt.post {
			t.Errorf("%+v PostCost = %q, want %q", tt.p, got, tt.post)
		}
		if got := tt.p.DigestRate(); got != tt.digest {
			t.Errorf("%+v DigestRate = %q, want %q", tt.p, got, tt.digest)
		}
	}
}
