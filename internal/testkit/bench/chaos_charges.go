package bench

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/feedmail/feedmail/billing"
	"github.com/feedmail/feedmail/internal/store"
)

// Charges is the ledger held against what the receivers took in: each
// message received (accepted or dropped after the dot) charged exactly
// once and not refunded; nothing charged that was not received, unless
// refunded.
type Charges struct {
	Messages          int      `json:"messages_received"` // distinct paid messages (item, digest)
	ChargedOnce       int      `json:"charged_once"`
	Credits           int64    `json:"credits_charged"`
	Refunds           int      `json:"refunds"`
	Uncharged         []string `json:"received_uncharged,omitempty"`
	ChargedTwice      []string `json:"charged_twice,omitempty"`
	RefundedReceived  []string `json:"refunded_though_received,omitempty"`
	ChargedUnreceived []string `json:"charged_not_received,omitempty"`
	// InFlight counts rows charged and still to be sent when the serves
	// stopped (posts published after the window), by outbox state.
	InFlight map[string]int `json:"charged_in_flight,omitempty"`
}

// ok says whether every delivery was charged exactly once and nothing
// else was charged.
func (c Charges) ok() bool {
	return len(c.Uncharged)+len(c.ChargedTwice)+len(c.RefundedReceived)+len(c.ChargedUnreceived) == 0
}

// messageKey matches the Message-IDs of instant and digest emails.
var messageKey = regexp.MustCompile(`^<(item)-([0-9]+)-([0-9]+)\.|^<(digest)\.([0-9]+)\.`)

// dedupeOf returns the outbox dedupe key of a received message ("" for
// one that is not a paid delivery), hooks by their outbox id.
func dedupeOf(key string, hookRows map[int64]string) string {
	if m := messageKey.FindStringSubmatch(key); m != nil {
		if m[1] == "item" {
			return "item:" + m[2] + ":" + m[3]
		}
		return "digest:" + m[5]
	}
	if id, err := strconv.ParseInt(strings.TrimPrefix(key, "feedmail-"), 10, 64); err == nil && strings.HasPrefix(key, "feedmail-") {
		return hookRows[id]
	}
	return ""
}

// A row charged and not received counts against the ledger only once it
// is over (sent, failed, expired); one still queued is in flight.

// charges reads the outbox's paid rows and the ledger's charges and
// refunds and holds them against the receptions.
func (c *chaos) charges(ctx context.Context, recs []reception) (Charges, error) {
	var rows []struct {
		ID        int64
		DedupeKey string
		State     string
	}
	db := c.s.st.DB.WithContext(ctx)
	if err := db.Raw(`SELECT id, dedupe_key, state FROM outbox WHERE kind IN (?, ?)`, store.KindItem, store.KindDigest).Scan(&rows).Error; err != nil {
		return Charges{}, fmt.Errorf("read the outbox: %w", err)
	}
	byID, state := map[int64]string{}, map[string]string{}
	for _, r := range rows {
		byID[r.ID], state[r.DedupeKey] = r.DedupeKey, r.State
	}
	var entries []struct {
		IdempotencyKey string
		Kind           string
		Amount         int64
	}
	if err := db.Raw(`SELECT idempotency_key, kind, amount FROM ledger_entries WHERE kind IN (?, ?)`,
		store.LedgerCharge, store.LedgerRefund).Scan(&entries).Error; err != nil {
		return Charges{}, fmt.Errorf("read the ledger: %w", err)
	}
	received := map[string]bool{}
	for _, r := range recs {
		if dk := dedupeOf(r.Key, byID); dk != "" {
			received[dk] = true
		}
	}
	return holdCharges(received, state, entries), nil
}

// holdCharges is the pure part of charges.
func holdCharges(received map[string]bool, state map[string]string, entries []struct {
	IdempotencyKey string
	Kind           string
	Amount         int64
}) Charges {
	charged, refunded := map[string]int{}, map[string]bool{}
	var ch Charges
	for _, e := range entries {
		switch {
		case e.Kind == store.LedgerCharge && strings.HasPrefix(e.IdempotencyKey, billing.KeyOutboxCharge("")):
			charged[strings.TrimPrefix(e.IdempotencyKey, billing.KeyOutboxCharge(""))]++
			ch.Credits -= e.Amount
		case e.Kind == store.LedgerRefund && strings.HasPrefix(e.IdempotencyKey, billing.KeyOutboxRefund("")):
			refunded[strings.TrimPrefix(e.IdempotencyKey, billing.KeyOutboxRefund(""))] = true
			ch.Refunds++
		}
	}
	ch.InFlight = map[string]int{}
	for dk := range received {
		ch.Messages++
		switch {
		case charged[dk] == 0:
			ch.Uncharged = append(ch.Uncharged, dk)
		case charged[dk] > 1:
			ch.ChargedTwice = append(ch.ChargedTwice, dk)
		case refunded[dk]:
			ch.RefundedReceived = append(ch.RefundedReceived, dk)
		default:
			ch.ChargedOnce++
		}
	}
	for dk := range charged {
		if received[dk] || refunded[dk] || !strings.HasPrefix(dk, "item:") && !strings.HasPrefix(dk, "digest:") {
			continue
		}
		switch st := state[dk]; st {
		case store.OutboxSent, store.OutboxFailed, store.OutboxExpired:
			ch.ChargedUnreceived = append(ch.ChargedUnreceived, dk+" ("+st+")")
		default:
			ch.InFlight[st]++
		}
	}
	for _, l := range [][]string{ch.Uncharged, ch.ChargedTwice, ch.RefundedReceived, ch.ChargedUnreceived} {
		sort.Strings(l)
	}
	return ch
}
