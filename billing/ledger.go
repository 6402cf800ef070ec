package billing

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"time"
)

// Email is paid for by charging a paid outbox row once (KeyOutboxCharge)
// before it is sent, refunding it once (KeyOutboxRefund) if it ends
// undelivered, and sending one free notice per shortage (KeyCreditsNotice).

// KeyOutboxCharge is the idempotency key of the charge for the outbox row
// whose dedupe key is dedupeKey: "charge:" + dedupeKey, the one rule for
// every charge. For an instant email (dedupe key "item:<sub>:<item>") that
// is "charge:item:<sub>:<item>"; for a digest issue "charge:" + the digest
// row's dedupe key. Dedupe keys are unique in the outbox, so charge keys
// are unique too. A post sent free (a burst, see Burst) gets its ledger
// line under the same key, with 0 credits.
func KeyOutboxCharge(dedupeKey string) string { return string(KindCharge) + ":" + dedupeKey }

// KeyOutboxRefund is the key of the refund of that charge:
// KeyRefund(KeyOutboxCharge(dedupeKey)).
func KeyOutboxRefund(dedupeKey string) string { return KeyRefund(KeyOutboxCharge(dedupeKey)) }

// KeyCreditsNotice is the outbox dedupe key of the free out-of-credits
// notice for user in one shortage episode: "credits:<user>:<episode>",
// where the episode is the id of the person's latest grant, purchase or
// positive adjustment (0 before any). Credits arriving start a new
// episode, so running out again earns exactly one more notice.
func KeyCreditsNotice(user, episode int64) string {
	return "credits:" + strconv.FormatInt(user, 10) + ":" + strconv.FormatInt(episode, 10)
}

// KeyAdminGrant is the key of an operator's grant (`feedmail credits
// grant`): "grant:admin:<user>:<time>:<random>". Each call makes a new key:
// two grants typed by the operator are two grants. A caller that needs a
// replay-safe grant passes its own key instead.
func KeyAdminGrant(user int64, now time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return Key(string(KindGrant), "admin", user, now, hex.EncodeToString(b[:]))
}
