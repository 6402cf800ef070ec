package billing

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// Errors of the ledger arithmetic. Test with errors.Is.
var (
	// ErrInsufficient: the entry would take the balance below zero.
	ErrInsufficient = errors.New("insufficient credits")
	// ErrOverflow: the balance would leave the int64 range.
	ErrOverflow = errors.New("credit balance overflow")
	// ErrBadEntry: unknown entry kind, or an amount whose sign the kind forbids.
	ErrBadEntry = errors.New("invalid ledger entry")
)

// EntryKind is the kind of a ledger entry, stored as this string.
type EntryKind string

// Ledger entry kinds and the sign of their amounts (CheckEntry):
const (
	KindGrant      EntryKind = "grant"      // > 0: trial credits at signup, operator gifts
	KindPurchase   EntryKind = "purchase"   // > 0: a paid pack
	KindCharge     EntryKind = "charge"     // ≤ 0: an email sent (instant or digest issue); 0 when sent free
	KindRefund     EntryKind = "refund"     // > 0: credits given back for a charge that should not stand
	KindAdjustment EntryKind = "adjustment" // ≠ 0: operator correction, e.g. a payment refunded or disputed
)

// Kinds returns every entry kind, in the order above.
func Kinds() []EntryKind {
	return []EntryKind{KindGrant, KindPurchase, KindCharge, KindRefund, KindAdjustment}
}

// Valid reports whether k is one of the kinds above.
func (k EntryKind) Valid() bool {
	switch k {
	case KindGrant, KindPurchase, KindCharge, KindRefund, KindAdjustment:
		return true
	}
	return false
}

// CheckEntry reports whether an entry of kind k may carry amount: grants,
// purchases and refunds add credits, charges take them, adjustments go either
// way; no entry is zero but a charge of 0, the line of an email sent free
// (its reason says why, e.g. BurstReason). Errors wrap ErrBadEntry.
func CheckEntry(k EntryKind, amount int64) error {
	if !k.Valid() {
		return fmt.Errorf("%w: unknown kind %q", ErrBadEntry, string(k))
	}
	switch {
	case amount == 0 && k == KindCharge:
		return nil
	case amount == 0:
		return fmt.Errorf("%w: %s of 0 credits", ErrBadEntry, k)
	case k == KindCharge && amount > 0:
		return fmt.Errorf("%w: a charge must be negative, got %d", ErrBadEntry, amount)
	case k != KindCharge && k != KindAdjustment && amount < 0:
		return fmt.Errorf("%w: a %s must be positive, got %d", ErrBadEntry, k, amount)
	}
	return nil
}

// Apply returns balance + amount. It fails with ErrInsufficient when the
// result would be negative (the cached balance can never go below zero) and
// with ErrOverflow when it would not fit in an int64; the balance is then
// unchanged. A negative starting balance (which only a broken store could
// hold) accepts only entries that do not lower it further.
func Apply(balance, amount int64) (int64, error) {
	if amount > 0 && balance > math.MaxInt64-amount {
		return balance, fmt.Errorf("%w: %d + %d", ErrOverflow, balance, amount)
	}
	if amount < 0 && balance < math.MinInt64-amount {
		return balance, fmt.Errorf("%w: balance %d, amount %d", ErrInsufficient, balance, amount)
	}
	next := balance + amount
	if next < 0 && amount < 0 {
		return balance, fmt.Errorf("%w: balance %d, need %d", ErrInsufficient, balance, -amount)
	}
	return next, nil
}

// Idempotency keys. Every ledger entry carries one, unique in the ledger, so a
// replayed charge, webhook or signup cannot count twice. Keys are the entry's
// kind and references joined by ":"; a reference containing ":" or "%" has
// those escaped ("%3A", "%25") so that distinct reference lists never make
// the same key. A time.Time reference is written in UTC as
// 20060102T150405Z (with a fraction when it has one), without colons.

// Key joins kind and refs into an idempotency key, e.g.
// Key("grant", "admin", 42, "welcome") = "grant:admin:42:welcome".
func Key(kind string, refs ...any) string {
	var b strings.Builder
	b.WriteString(keyPart(kind))
	for _, r := range refs {
		b.WriteByte(':')
		b.WriteString(keyPart(r))
	}
	return b.String()
}

// KeyPurchase is the key of a paid checkout session: "purchase:<session>".
func KeyPurchase(session string) string { return Key(string(KindPurchase), session) }

// KeyTrial is the key of an account's trial grant: "trial:<user>", so an
// account gets its trial credits once.
func KeyTrial(user int64) string { return Key("trial", user) }

// KeyRefund is the key of the refund of the entry with key of:
// "refund:" + of (with of's separators kept), so a charge is refunded once.
func KeyRefund(of string) string { return string(KindRefund) + ":" + of }

func keyPart(v any) string {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case time.Time:
		return x.UTC().Format("20060102T150405.999999999Z")
	case fmt.Stringer:
		s = x.String()
	default:
		s = fmt.Sprint(x)
	}
	if !strings.ContainsAny(s, ":%") {
		return s
	}
	return strings.NewReplacer("%", "%25", ":", "%3A").Replace(s)
}
