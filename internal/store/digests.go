package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"gorm.io/gorm"
)

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
	// Channel, Target and ChannelSecret: where its issues go, as for a
	// Subscription.
	Channel       string `gorm:"not null;default:email"`
	Target        string
	ChannelSecret string
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

// Digests: a person's named schedules, their issues and the items waiting
// for them. The schedule arithmetic lives in package digest (which imports
// this package, so the store takes a parsed schedule rather than parsing one);
// the slots themselves live here so that many processes share them.

// ErrBadDigestName is returned for an empty, over-long or unprintable name.
var ErrBadDigestName = errors.New("invalid digest name")

// MaxDigestNameLen is the longest digest name accepted, in characters.
const MaxDigestNameLen = 60

// Issue states. An issue is created "queued" together with its outbox row;
// from then on the outbox row carries the delivery state (queued, held,
// sent, failed, expired).
const IssueQueued = "queued"

// DigestSchedule is what the store needs of a parsed digest schedule;
// *digest.Schedule implements it.
type DigestSchedule interface {
	Spec() string
	Location() *time.Location
	Next(after time.Time) time.Time
}

// CleanDigestName trims a digest name and checks it: 1 to MaxDigestNameLen
// characters, no control characters.
func CleanDigestName(name string) (string, error) {
	name = strings.Join(strings.Fields(name), " ")
	switch {
	case name == "":
		return "", fmt.Errorf("%w: empty", ErrBadDigestName)
	case utf8.RuneCountInString(name) > MaxDigestNameLen:
		return "", fmt.Errorf("%w: %q is longer than %d characters", ErrBadDigestName, name, MaxDigestNameLen)
	case strings.ContainsFunc(name, func(r rune) bool { return unicode.IsControl(r) || r == utf8.RuneError }):
		return "", fmt.Errorf("%w: %q contains control characters", ErrBadDigestName, name)
	}
	return name, nil
}

// SetDigest creates the digest called name for user, or changes the
// schedule of the one they have (names match case-insensitively, and the
// spelling given here is kept). Its next slot is the schedule's first slot
// after the store clock's now. Items already waiting stay queued for the
// next issue.
func (s *Store) SetDigest(ctx context.Context, userID int64, name string, sched DigestSchedule) (*Digest, error) {
	name, err := CleanDigestName(name)
	if err != nil {
		return nil, err
	}
	if sched == nil {
		return nil, errors.New("set digest: no schedule")
	}
	now := s.now()
	next := sched.Next(now)
	if next.IsZero() {
		return nil, fmt.Errorf("set digest %q: schedule %s has no next slot", name, sched.Spec())
	}
	var out Digest
	err = s.Tx(ctx, func(tx *Store) error {
		var d Digest
		err := tx.DB.Where("user_id = ? AND LOWER(name) = LOWER(?)", userID, name).Take(&d).Error
		switch {
		case errors.Is(err, gorm.ErrRecordNotFound):
			d = Digest{UserID: userID, Name: name, Schedule: sched.Spec(), Timezone: sched.Location().String(),
				NextSlotAt: utc(next), CreatedAt: now}
			if err := tx.DB.Create(&d).Error; err != nil {
				return fmt.Errorf("create digest: %w", err)
			}
		case err != nil:
			return err
		default:
			if err := tx.DB.Model(&Digest{}).Where("id = ?", d.ID).Updates(map[string]any{
				"name": name, "schedule": sched.Spec(), "timezone": sched.Location().String(), "next_slot_at": utc(next),
			}).Error; err != nil {
				return fmt.Errorf("update digest %d: %w", d.ID, err)
			}
			if err := tx.DB.Take(&d, d.ID).Error; err != nil {
				return err
			}
		}
		out = d
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("set digest %q of user %d: %w", name, userID, err)
	}
	return &out, nil
}

// DigestByName returns user's digest called name (case-insensitive), or
// ErrNotFound.
func (s *Store) DigestByName(ctx context.Context, userID int64, name string) (*Digest, error) {
	var d Digest
	err := s.DB.WithContext(ctx).Where("user_id = ? AND LOWER(name) = LOWER(?)", userID, strings.Join(strings.Fields(name), " ")).Take(&d).Error
	if err != nil {
		return nil, fmt.Errorf("digest %q: %w", name, notFound(err))
	}
	return &d, nil
}

// DigestByID looks a digest up.
func (s *Store) DigestByID(ctx context.Context, id int64) (*Digest, error) {
	var d Digest
	if err := s.DB.WithContext(ctx).Take(&d, id).Error; err != nil {
		return nil, fmt.Errorf("digest %d: %w", id, notFound(err))
	}
	return &d, nil
}

// DigestsOfUser lists a person's digests by name.
func (s *Store) DigestsOfUser(ctx context.Context, userID int64) ([]Digest, error) {
	var out []Digest
	err := s.DB.WithContext(ctx).Where("user_id = ?", userID).Order("name, id").Find(&out).Error
	return out, err
}

// DigestIssueByID looks an issue up.
func (s *Store) DigestIssueByID(ctx context.Context, id int64) (*DigestIssue, error) {
	var is DigestIssue
	if err := s.DB.WithContext(ctx).Take(&is, id).Error; err != nil {
		return nil, fmt.Errorf("digest issue %d: %w", id, notFound(err))
	}
	return &is, nil
}

// PendingDigestItems counts the items waiting for the next issue of a digest.
func (s *Store) PendingDigestItems(ctx context.Context, digestID int64) (int64, error) {
	var n int64
	err := s.DB.WithContext(ctx).Model(&DigestItem{}).Where("digest_id = ? AND issue_id IS NULL", digestID).Count(&n).Error
	return n, err
}

// IssueContent is what a digest email shows: the issue, its digest, and its
// items grouped by feed.
type IssueContent struct {
	Issue  DigestIssue
	Digest Digest
	// Feeds are ordered by their newest item, newest first; each feed's
	// items newest first (by published date, else the time first seen).
	Feeds []IssueFeed
}

// IssueFeed is one feed's part of an issue.
type IssueFeed struct {
	FeedID              int64
	Title, URL, SiteURL string
	// Format is the format of the subscription that routed its items
	// (Format*).
	Format string
	Items  []Item
	// More counts the feed's items of the issue left out of Items by the
	// per-feed cap (the oldest), so that a reader is told of them.
	More int
}

// DigestIssueContent loads an issue and its items for rendering: those whose
// subscription is still active (the person may have unsubscribed since the
// issue was made), each once however many of the person's deliveries of
// its feed go into the digest. At most perFeed items per feed are returned
// (the newest; 0 means all); the feed's More counts the ones left out.
func (s *Store) DigestIssueContent(ctx context.Context, issueID int64, perFeed int) (*IssueContent, error) {
	var c IssueContent
	db := s.DB.WithContext(ctx)
	if err := db.Take(&c.Issue, issueID).Error; err != nil {
		return nil, fmt.Errorf("digest issue %d: %w", issueID, notFound(err))
	}
	if err := db.Take(&c.Digest, c.Issue.DigestID).Error; err != nil {
		return nil, fmt.Errorf("digest %d of issue %d: %w", c.Issue.DigestID, issueID, notFound(err))
	}
	type row struct {
		Item
		FeedTitle, FeedURL, FeedSiteURL, SubFormat string
	}
	var rows []row
	// digest_id narrows the scan to the (digest_id, issue_id) index.
	err := db.Raw(`SELECT it.*, f.title AS feed_title, f.url AS feed_url, f.site_url AS feed_site_url, s.format AS sub_format
FROM digest_items di JOIN items it ON it.id = di.item_id JOIN feeds f ON f.id = di.feed_id
JOIN subscriptions s ON s.id = di.subscription_id AND s.state = 'active'
WHERE di.digest_id = ? AND di.issue_id = ?`, c.Issue.DigestID, issueID).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("items of digest issue %d: %w", issueID, err)
	}
	byFeed, seen := map[int64]int{}, map[int64]bool{}
	for _, r := range rows {
		if seen[r.ID] {
			continue // two of the person's deliveries of the feed go into this digest
		}
		seen[r.ID] = true
		i, ok := byFeed[r.FeedID]
		if !ok {
			i = len(c.Feeds)
			byFeed[r.FeedID] = i
			c.Feeds = append(c.Feeds, IssueFeed{FeedID: r.FeedID, Title: r.FeedTitle, URL: r.FeedURL, SiteURL: r.FeedSiteURL,
				Format: r.SubFormat})
		}
		c.Feeds[i].Items = append(c.Feeds[i].Items, r.Item)
	}
	newestFirst := func(a, b Item) int {
		if c := ItemDate(b).Compare(ItemDate(a)); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	}
	for i := range c.Feeds {
		slices.SortFunc(c.Feeds[i].Items, newestFirst)
		if perFeed > 0 && len(c.Feeds[i].Items) > perFeed {
			c.Feeds[i].More = len(c.Feeds[i].Items) - perFeed
			c.Feeds[i].Items = c.Feeds[i].Items[:perFeed]
		}
	}
	slices.SortFunc(c.Feeds, func(a, b IssueFeed) int {
		if c := newestFirst(a.Items[0], b.Items[0]); c != 0 {
			return c
		}
		return cmp.Compare(a.FeedID, b.FeedID)
	})
	return &c, nil
}

// ClaimDueDigests leases up to limit digests whose next slot has come. A
// digest's slot time stays as it is (the issue is keyed on it); the lease
// alone keeps other workers away until it expires. The claim reads the
// lease each digest carried before, for takeover.go.
func (s *Store) ClaimDueDigests(ctx context.Context, owner string, lease time.Duration, now time.Time, limit int) ([]Digest, error) {
	until := utc(now.Add(lease))
	d := s.sqlDialect()
	pick := `SELECT id, lease_owner, lease_until FROM digests
  WHERE next_slot_at <= ? AND (lease_until IS NULL OR lease_until <= ?)
  ORDER BY next_slot_at LIMIT ?` + d.skipLocked()
	pickArgs := []any{utc(now), utc(now), limit}
	set := `UPDATE digests SET lease_owner = ?, lease_until = ?`
	var out []Digest
	var prev []prevLease
	if d.pg {
		var claimed []struct {
			Digest   `gorm:"embedded"`
			PrevCols `gorm:"embedded"`
		}
		q := `WITH prev AS MATERIALIZED (` + pick + `)
` + set + `
FROM prev WHERE digests.id = ANY(ARRAY(SELECT id FROM prev)) AND digests.id = prev.id
RETURNING digests.*, ` + prevReturning
		if err := s.DB.WithContext(ctx).Raw(q, append(pickArgs, owner, until)...).Scan(&claimed).Error; err != nil {
			return nil, fmt.Errorf("claim digests: %w", err)
		}
		out, prev = make([]Digest, len(claimed)), make([]prevLease, len(claimed))
		for i, c := range claimed {
			out[i], prev[i] = c.Digest, c.prevLease()
		}
	} else {
		var err error
		if prev, err = s.claimPicked(ctx, pick, pickArgs, set, []any{owner, until}, &out); err != nil {
			return nil, fmt.Errorf("claim digests: %w", err)
		}
	}
	s.reportTakeover(TakeoverDigests, owner, now, prev)
	return out, nil
}

// ReleaseDigests gives leases back without assembling (a worker stopping
// early); the digests stay due.
func (s *Store) ReleaseDigests(ctx context.Context, owner string, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	return s.DB.WithContext(ctx).Exec(`UPDATE digests SET lease_owner = '', lease_until = NULL WHERE id IN ? AND lease_owner = ?`,
		ids, owner).Error
}

// ErrDigestNameTaken is returned by SaveAccountDigest when the person already
// has another digest with that name.
var ErrDigestNameTaken = errors.New("digest name already used")

// AccountDigest returns digest id if it belongs to userID, else ErrNotFound.
func (s *Store) AccountDigest(ctx context.Context, userID, id int64) (*Digest, error) {
	var d Digest
	if err := s.DB.WithContext(ctx).Where("id = ? AND user_id = ?", id, userID).Take(&d).Error; err != nil {
		return nil, fmt.Errorf("digest %d of user %d: %w", id, userID, notFound(err))
	}
	return &d, nil
}

// SaveAccountDigest creates (id 0) or changes (id of one of userID's
// digests) a digest: name, schedule and zone, with the next slot the
// schedule's first after the store clock's now. A name another of the
// person's digests has (case-insensitively) gives ErrDigestNameTaken; an id
// that is not theirs gives ErrNotFound; a bad name ErrBadDigestName. Unlike
// SetDigest, which finds its digest by name, this one renames by id.
func (s *Store) SaveAccountDigest(ctx context.Context, userID, id int64, name string, sched DigestSchedule) (*Digest, error) {
	name, err := CleanDigestName(name)
	if err != nil {
		return nil, err
	}
	now := s.now()
	next := sched.Next(now)
	if next.IsZero() {
		return nil, fmt.Errorf("save digest %q: schedule %s has no next slot", name, sched.Spec())
	}
	var out Digest
	err = s.Tx(ctx, func(tx *Store) error {
		var clash int64
		if err := tx.DB.Model(&Digest{}).Where("user_id = ? AND LOWER(name) = LOWER(?) AND id <> ?", userID, name, id).
			Count(&clash).Error; err != nil {
			return err
		}
		if clash > 0 {
			return fmt.Errorf("%w: %q", ErrDigestNameTaken, name)
		}
		if id == 0 {
			out = Digest{UserID: userID, Name: name, Schedule: sched.Spec(), Timezone: sched.Location().String(),
				NextSlotAt: utc(next), CreatedAt: now}
			return tx.DB.Create(&out).Error
		}
		res := tx.DB.Model(&Digest{}).Where("id = ? AND user_id = ?", id, userID).Updates(map[string]any{
			"name": name, "schedule": sched.Spec(), "timezone": sched.Location().String(), "next_slot_at": utc(next)})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return ErrNotFound
		}
		return tx.DB.Take(&out, id).Error
	})
	if err != nil {
		return nil, fmt.Errorf("save digest %q of user %d: %w", name, userID, err)
	}
	return &out, nil
}
