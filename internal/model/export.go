package model

import (
	"encoding/json"
	"fmt"
	"time"
)

// AccountExport is everything feedmail keeps about one person, as their
// data export (`feedmail account export` and the account page's download)
// writes it in JSON. Times are UTC.
type AccountExport struct {
	Email         string               `json:"email"`
	Timezone      string               `json:"timezone"`
	CreatedAt     time.Time            `json:"created_at"`
	ConfirmedAt   *time.Time           `json:"confirmed_at"`
	Balance       int64                `json:"balance"`
	Paused        *ExportPause         `json:"paused,omitempty"` // the whole account
	ExportedAt    time.Time            `json:"exported_at"`
	Subscriptions []ExportSubscription `json:"subscriptions"`
	Digests       []ExportDigest       `json:"digests"`
	Ledger        []LedgerLine         `json:"ledger"`
	Purchases     []ExportPurchase     `json:"purchases"`
	// Delivery is what the mail system said about mail to the address:
	// the bounce counts and every report feedmail recorded.
	Delivery ExportDelivery `json:"delivery"`
	// Publisher is what the person does as a feed's publisher: the feeds
	// they pay for and their claims (omitted when none).
	Publisher *ExportPublisher `json:"publisher,omitempty"`
	// APITokens are the person's JSON API tokens (never the tokens
	// themselves, which are not kept).
	APITokens []ExportAPIToken `json:"api_tokens"`
}

// ExportAPIToken is one API token: its name, when it was made, last used
// and revoked.
type ExportAPIToken struct {
	Name       string     `json:"name"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	RevokedAt  *time.Time `json:"revoked_at,omitempty"`
}

// ExportDelivery is the address's bounce state and the reports (bounces,
// complaints, unsubscribes by email) recorded about mail sent to it.
type ExportDelivery struct {
	HardBounces   int            `json:"hard_bounces"`
	SoftBounces   int            `json:"soft_bounces"`
	BouncingSince *time.Time     `json:"bouncing_since,omitempty"`
	Reports       []ExportReport `json:"reports"`
}

// ExportReport is one recorded report: its kind ("bounce", "complaint",
// "unsubscribe"), a bounce's severity, cause and whose problem it was, its
// status, the reporting system's words, and when it arrived.
type ExportReport struct {
	Kind       string    `json:"kind"`
	Severity   string    `json:"severity,omitempty"`
	Reason     string    `json:"reason,omitempty"`
	Party      string    `json:"party,omitempty"`
	Status     string    `json:"status,omitempty"`
	Detail     string    `json:"detail,omitempty"`
	ReceivedAt time.Time `json:"received_at"`
}

// ExportSubscription is one subscription, ended ones included, with the
// proof of consent: when it was asked for, and when and how confirmed.
type ExportSubscription struct {
	FeedURL   string `json:"feed_url"`
	FeedTitle string `json:"feed_title"`
	State     string `json:"state"`
	// Delivery is "instant" or "digest" (then Digest names it).
	Delivery string `json:"delivery"`
	Digest   string `json:"digest,omitempty"`
	Folder   string `json:"folder,omitempty"`
	// Include, Exclude and Format are the reader's controls: the filters'
	// terms ("" for none) and how emails show a post.
	Include     string     `json:"include"`
	Exclude     string     `json:"exclude"`
	Format      string     `json:"format"`
	CreatedAt   time.Time  `json:"created_at"`
	RequestedAt *time.Time `json:"requested_at"`
	ConfirmedAt *time.Time `json:"confirmed_at"`
	// ConfirmedBy is "link", "operator", "account" (the store's
	// ConfirmedBy*), "" while not confirmed, or "unrecorded" for one
	// confirmed before feedmail kept the how.
	ConfirmedBy string       `json:"confirmed_by"`
	EndedAt     *time.Time   `json:"ended_at,omitempty"`
	EndedReason string       `json:"ended_reason,omitempty"`
	Paused      *ExportPause `json:"paused,omitempty"`
	// Channel is where its posts go.
	Channel ExportChannel `json:"channel"`
}

// ExportChannel is a channel and its target. A secret (a webhook's
// signing secret, an access token) is never exported, only that one is
// set: the account page shows a webhook's secret to its owner.
type ExportChannel struct {
	Name      string `json:"name"`
	Target    string `json:"target,omitempty"`
	SecretSet bool   `json:"secret_set,omitempty"`
}

// ExportPause is a pause lasting when the export was made: since when,
// and until when (absent: until resumed).
type ExportPause struct {
	Since time.Time  `json:"since"`
	Until *time.Time `json:"until,omitempty"`
}

// ExportDigest is one digest and its schedule.
type ExportDigest struct {
	Name       string        `json:"name"`
	Schedule   string        `json:"schedule"`
	Timezone   string        `json:"timezone"`
	NextSlotAt time.Time     `json:"next_slot_at"`
	LastSlotAt *time.Time    `json:"last_slot_at,omitempty"`
	CreatedAt  time.Time     `json:"created_at"`
	Channel    ExportChannel `json:"channel"`
}

// ExportPurchase is one credit pack bought (or started and not paid).
type ExportPurchase struct {
	Credits         int64      `json:"credits"`
	PriceCents      int64      `json:"price_cents"`
	Currency        string     `json:"currency"`
	State           string     `json:"state"`
	CheckoutSession string     `json:"checkout_session"`
	CreatedAt       time.Time  `json:"created_at"`
	CompletedAt     *time.Time `json:"completed_at,omitempty"`
}

// JSON is the export as its file holds it: indented, ending in a newline.
func (e *AccountExport) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode account export: %w", err)
	}
	return append(b, '\n'), nil
}
