package billing

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// ErrBadPacks is returned by ParsePacks; the wrapped message names the
// offending entry.
var ErrBadPacks = errors.New("invalid credit packs")

// DefaultPacksSpec is the default value of FEEDMAIL_CREDIT_PACKS: 5,000
// credits for 5.00 and 100,000 credits for 50.00, so the bulk pack costs half
// as much per credit (1.00 versus 0.50 per thousand).
const DefaultPacksSpec = "5000:500,100000:5000"

// Limits on a pack, so that prices and balances stay far from int64 overflow
// and a typo (an extra zero or two) is caught rather than sold.
const (
	MaxPackCredits    = 1_000_000_000 // one billion credits
	MaxPackPriceCents = 100_000_000   // one million in major units
)

// Pack is a credit pack offered for sale: Credits for PriceCents, in the
// smallest unit of the operator's currency (cents; yen for JPY).
type Pack struct {
	Credits    int64
	PriceCents int64
}

// DefaultPacks returns the packs of DefaultPacksSpec. It returns a fresh
// slice on every call.
func DefaultPacks() []Pack {
	return []Pack{
		{Credits: 5000, PriceCents: 500},
		{Credits: 100000, PriceCents: 5000},
	}
}

// ParsePacks parses a FEEDMAIL_CREDIT_PACKS value: comma-separated
// "credits:price" entries, price in cents, e.g. "5000:500,100000:5000".
// Spaces around entries and numbers are ignored; "_" may group digits
// ("100_000:5_000"). Both numbers must be positive and within MaxPackCredits
// and MaxPackPriceCents, and no two packs may have the same number of
// credits. The result is sorted by credits, smallest first, for display.
// An empty value is an error: the caller decides the default.
func ParsePacks(s string) ([]Pack, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("%w: empty (want credits:cents[,credits:cents…], e.g. %q)", ErrBadPacks, DefaultPacksSpec)
	}
	var packs []Pack
	seen := map[int64]bool{}
	for i, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			return nil, fmt.Errorf("%w: entry %d is empty", ErrBadPacks, i+1)
		}
		c, p, ok := strings.Cut(entry, ":")
		if !ok {
			return nil, fmt.Errorf("%w: entry %d %q: want credits:cents", ErrBadPacks, i+1, entry)
		}
		credits, err := parsePackNumber(c, "credits", MaxPackCredits)
		if err != nil {
			return nil, fmt.Errorf("%w: entry %d %q: %v", ErrBadPacks, i+1, entry, err)
		}
		price, err := parsePackNumber(p, "price", MaxPackPriceCents)
		if err != nil {
			return nil, fmt.Errorf("%w: entry %d %q: %v", ErrBadPacks, i+1, entry, err)
		}
		if seen[credits] {
			return nil, fmt.Errorf("%w: entry %d %q: a pack of %d credits is already listed", ErrBadPacks, i+1, entry, credits)
		}
		seen[credits] = true
		packs = append(packs, Pack{Credits: credits, PriceCents: price})
	}
	sort.SliceStable(packs, func(i, j int) bool { return packs[i].Credits < packs[j].Credits })
	return packs, nil
}

func parsePackNumber(s, what string, max int64) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("%s missing", what)
	}
	if strings.HasPrefix(s, "_") || strings.HasSuffix(s, "_") || strings.Contains(s, "__") {
		return 0, fmt.Errorf("%s %q is not a whole number", what, s)
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(s, "_", ""), 10, 64)
	if err != nil || strings.ContainsAny(s, "+-") {
		if strings.HasPrefix(s, "-") {
			return 0, fmt.Errorf("%s %q must be positive", what, s)
		}
		return 0, fmt.Errorf("%s %q is not a whole number", what, s)
	}
	if n <= 0 {
		return 0, fmt.Errorf("%s %q must be positive", what, s)
	}
	if n > max {
		return 0, fmt.Errorf("%s %d is above the limit of %d", what, n, max)
	}
	return n, nil
}

// CentsPerThousand is the price of 1,000 credits in cents, for comparing
// packs on the credits page (DefaultPacks: 100 and 50).
func (p Pack) CentsPerThousand() float64 {
	if p.Credits <= 0 {
		return 0
	}
	return float64(p.PriceCents) * 1000 / float64(p.Credits)
}

// String describes the pack in the smallest currency unit, e.g.
// "5000 credits for 500".
func (p Pack) String() string {
	return fmt.Sprintf("%d credits for %d", p.Credits, p.PriceCents)
}

// zeroDecimal lists the currencies whose smallest unit is the major unit
// (amounts are whole yen, won, …), as payment processors count them.
func zeroDecimal(cur string) bool {
	switch cur {
	case "BIF", "CLP", "DJF", "GNF", "JPY", "KMF", "KRW", "MGA", "PYG", "RWF", "UGX", "VND", "VUV", "XAF", "XOF", "XPF":
		return true
	}
	return false
}

// currencySymbol returns the symbol written before the amount, or "" when the
// ISO code is written after it.
func currencySymbol(cur string) string {
	switch cur {
	case "USD":
		return "$"
	case "EUR":
		return "€"
	case "GBP":
		return "£"
	case "JPY":
		return "¥"
	case "INR":
		return "₹"
	}
	return ""
}

// FormatPrice formats an amount in the smallest unit of an ISO 4217 currency
// (case-insensitive; empty means USD) for display: "$5.00", "€1,234.50",
// "£0.99", "¥500", "-$1.00", and for other currencies the code after the
// number: "12.00 CHF", "1,000 KRW". Digits are grouped by thousands with
// commas (an English-language page; no locale rules).
func FormatPrice(cents int64, currency string) string {
	cur := strings.ToUpper(strings.TrimSpace(currency))
	if cur == "" {
		cur = "USD"
	}
	sign := ""
	u := uint64(cents)
	if cents < 0 {
		sign = "-"
		u = -u // two's complement: correct for math.MinInt64 too
	}
	var num string
	if zeroDecimal(cur) {
		num = groupThousands(u)
	} else {
		num = groupThousands(u/100) + fmt.Sprintf(".%02d", u%100)
	}
	if sym := currencySymbol(cur); sym != "" {
		return sign + sym + num
	}
	return sign + num + " " + cur
}

func groupThousands(u uint64) string {
	s := strconv.FormatUint(u, 10)
	if len(s) <= 3 {
		return s
	}
	var b strings.Builder
	first := len(s) % 3
	if first > 0 {
		b.WriteString(s[:first])
	}
	for i := first; i < len(s); i += 3 {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(s[i : i+3])
	}
	return b.String()
}
