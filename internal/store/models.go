package store

import (
	"time"
)

// Setting is one operator or process-wide value (e.g. the generated HMAC secret).
type Setting struct {
	Key   string `gorm:"primaryKey"`
	Value string
}

// User is a person who receives email. Balance is the cached sum of their
// ledger entries; the database refuses to let it go below zero.
type User struct {
	ID             int64 `gorm:"primaryKey"`
	Email          string
	Timezone       string
	Balance        int64
	ConfirmedAt    *time.Time
	TrialGranted   bool
	HardBounces    int
	BouncingSince  *time.Time
	CreditNoticeAt *time.Time // the free out-of-credits notice for the current shortage
	CreatedAt      time.Time
}

// Feed states.
const (
	FeedActive      = "active"
	FeedGone        = "gone"        // 410: never polled again
	FeedBlacklisted = "blacklisted" // 90 days of nothing but errors
)

// Feed is one feed URL, fetched once however many people follow it. It holds
// everything the poller needs to decide the next poll and to send a polite,
// conditional request.
type Feed struct {
	ID                int64 `gorm:"primaryKey"`
	URL               string
	Host              string // HostOf(URL), set by the store whenever URL is written
	Title             string
	SiteURL           string
	State             string
	SubscriberCount   int // active, confirmed subscriptions; kept in step by the store
	NextPollAt        time.Time
	PollReason        string
	ValidatorURL      string // the final URL the stored validators came from
	ETag              string `gorm:"column:etag"`
	LastModified      string
	BodyHash          string
	LastPolledAt      *time.Time
	LastStatus        int
	LastError         string
	LastElapsedMS     int `gorm:"column:last_elapsed_ms"`
	LastSuccessAt     *time.Time
	PrimedAt          *time.Time // first successful parse: items before it are never mailed
	LastNewItemAt     *time.Time
	NewestItemDate    *time.Time
	ConsecutiveErrors int
	ErrorsSince       *time.Time
	LastPingAt        *time.Time
	WebSubHub         string     `gorm:"column:websub_hub"`
	WebSubTopic       string     `gorm:"column:websub_topic"`
	WebSubState       string     `gorm:"column:websub_state"`
	WebSubSecret      string     `gorm:"column:websub_secret"`
	WebSubExpiresAt   *time.Time `gorm:"column:websub_expires_at"`
	WebSubRenewAt     *time.Time `gorm:"column:websub_renew_at"`
	LeaseOwner        string
	LeaseUntil        *time.Time
	// LogSeq counts the polls and pushes recorded. LoggedAt is when the
	// newest poll_log line was written, if that line is a poll's (a push
	// clears it): the line later identical polls may be folded into (see
	// PollRecord.Fold).
	LogSeq    int64
	LoggedAt  *time.Time
	CreatedAt time.Time
	UpdatedAt time.Time
}

// PollLog is one poll's record for the public status page.
type PollLog struct {
	ID          int64 `gorm:"primaryKey"`
	FeedID      int64
	PolledAt    time.Time
	URL         string
	Status      int
	Outcome     string
	Conditional bool
	Bytes       int64
	ElapsedMS   int `gorm:"column:elapsed_ms"`
	NewItems    int
	Reason      string
	// Seq is the feed's LogSeq with this line recorded; 0 on lines written
	// before lines were folded. See Repeats.
	Seq int64
}

// TableName keeps the singular table name.
func (PollLog) TableName() string { return "poll_log" }

// Subscription states.
const (
	SubPending = "pending"
	SubActive  = "active"
	SubEnded   = "ended"
)

// Subscription links a person to a feed, delivered instantly (DigestID nil) or
// into one of their digests.
type Subscription struct {
	ID          int64 `gorm:"primaryKey"`
	UserID      int64
	FeedID      int64
	DigestID    *int64
	State       string
	CreatedAt   time.Time
	ConfirmedAt *time.Time
	EndedAt     *time.Time
	EndedReason string
}

// Item is one entry of a feed, recorded once per (feed, identity).
type Item struct {
	ID          int64 `gorm:"primaryKey"`
	FeedID      int64
	Identity    string
	GUID        string `gorm:"column:guid"`
	Link        string
	Title       string
	Content     string
	Author      string
	PublishedAt *time.Time
	SeenAt      time.Time
	IgnoredRule string // non-empty: recorded as seen, never delivered
}

// Digest is a person's named schedule.
type Digest struct {
	ID         int64 `gorm:"primaryKey"`
	UserID     int64
	Name       string
	Schedule   string
	Timezone   string
	NextSlotAt time.Time
	LastSlotAt *time.Time
	LeaseOwner string
	LeaseUntil *time.Time
	CreatedAt  time.Time
}

// DigestIssue is the one issue of a digest for one slot.
type DigestIssue struct {
	ID        int64 `gorm:"primaryKey"`
	DigestID  int64
	SlotAt    time.Time
	State     string
	FeedCount int
	ItemCount int
	Credits   int
	CreatedAt time.Time
}

// DigestItem is an item waiting for (or included in) a digest issue.
type DigestItem struct {
	ID             int64 `gorm:"primaryKey"`
	DigestID       int64
	SubscriptionID int64
	ItemID         int64
	FeedID         int64
	IssueID        *int64
	QueuedAt       time.Time
}

// Outbox kinds.
const (
	KindItem   = "item"
	KindDigest = "digest"
	KindNotice = "notice"
)

// Outbox states.
const (
	OutboxQueued  = "queued"
	OutboxHeld    = "held" // waiting for credits or for a bouncing address
	OutboxSent    = "sent"
	OutboxFailed  = "failed"
	OutboxExpired = "expired" // waited for credits for too long
)

// OutboxEmail is one email to send. DedupeKey makes queueing idempotent.
type OutboxEmail struct {
	ID             int64 `gorm:"primaryKey"`
	Kind           string
	DedupeKey      string
	UserID         int64
	SubscriptionID *int64
	ItemID         *int64
	IssueID        *int64
	ToAddr         string
	Credits        int
	State          string
	Attempts       int
	NextAttemptAt  time.Time
	LeaseOwner     string
	LeaseUntil     *time.Time
	LastError      string
	MessageID      string
	Payload        string
	CreatedAt      time.Time
	SentAt         *time.Time
}

// TableName keeps the table name short.
func (OutboxEmail) TableName() string { return "outbox" }

// LedgerEntry is one append-only change to a person's credits.
type LedgerEntry struct {
	ID             int64 `gorm:"primaryKey"`
	UserID         int64
	Kind           string
	Amount         int64
	BalanceAfter   int64
	IdempotencyKey string
	Reason         string
	CreatedAt      time.Time
}

// Purchase is a Stripe Checkout session for a credit pack.
type Purchase struct {
	ID              int64 `gorm:"primaryKey"`
	UserID          int64
	Credits         int64
	PriceCents      int64
	Currency        string
	StripeSessionID string
	State           string
	CreatedAt       time.Time
	CompletedAt     *time.Time
}

// PaymentEvent records a processed webhook event id so replays do nothing.
type PaymentEvent struct {
	EventID    string `gorm:"primaryKey"`
	Type       string
	SessionID  string
	ReceivedAt time.Time
}

// Host is per-host politeness state shared by every poller process.
type Host struct {
	Host               string `gorm:"primaryKey"`
	MinIntervalSeconds int
	BackoffUntil       *time.Time
	BackoffReason      string
	UpdatedAt          time.Time
	// LeaseOwner holds the host (polls its feeds) until LeaseUntil; see
	// ClaimDueFeeds. Used on Postgres only.
	LeaseOwner string
	LeaseUntil *time.Time
}

// AllModels lists every model, for schema checks.
func AllModels() []any {
	return []any{&Setting{}, &User{}, &Feed{}, &PollLog{}, &Subscription{}, &Item{}, &Digest{},
		&DigestIssue{}, &DigestItem{}, &OutboxEmail{}, &LedgerEntry{}, &Purchase{}, &PaymentEvent{}, &Host{}}
}
