package bench

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/feedmail/feedmail/digest"
	"github.com/feedmail/feedmail/internal/channel/webhook"
	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/model"
	"github.com/feedmail/feedmail/internal/store"
)

// chaosDigestSchedule is the digest readers' schedule: a slot a minute, so
// that a three-minute run has several.
const chaosDigestSchedule = "@every 1m"

// chaosDigestUser begins the address of every digest reader, so that the
// oracle can tell their deliveries (which wait for a slot) from the rest.
const chaosDigestUser = "chaosdigest"

// digestReader reports whether reader id r is a digest reader's.
func digestReader(r string) bool { return strings.HasPrefix(r, "mail:"+chaosDigestUser) }

// seed writes steady's feeds and instant readers, then the chaos readers:
// every fifth feed (i % 5 == 0) is also followed into a digest, and every
// fifth (i % 5 == 1) by a webhook, each such person following
// feedsPerPerson feeds. It then reads back who reads what: the oracle's
// readers, as the bench configured them before serve ever ran.
func (c *chaos) seed(ctx context.Context) error {
	if err := c.s.seed(ctx); err != nil {
		return err
	}
	n := c.cfg.Feeds
	var dig, hook []int64
	for i := range n {
		id := c.s.minID + int64(i)
		switch i % 5 {
		case 0:
			dig = append(dig, id)
		case 1:
			hook = append(hook, id)
		}
	}
	if err := c.seedDigests(ctx, dig); err != nil {
		return err
	}
	if err := c.seedHooks(ctx, hook); err != nil {
		return err
	}
	return c.loadReaders(ctx)
}

// chaosUsers creates people for rows subscriptions, feedsPerPerson each.
func (c *chaos) chaosUsers(ctx context.Context, prefix string, rows int) ([]store.User, error) {
	now := time.Now().UTC().Truncate(time.Second)
	e := &env{cfg: Config{Log: c.cfg.Log, Progress: c.cfg.Progress}, clk: clock.NewFake(now), st: c.s.st}
	var done atomic.Int64
	return e.seedUsers(ctx, prefix, (rows+feedsPerPerson-1)/feedsPerPerson, &done)
}

// seedDigests gives each digest person a digest with a slot a minute and
// subscribes them to their feeds into it.
func (c *chaos) seedDigests(ctx context.Context, feeds []int64) error {
	users, err := c.chaosUsers(ctx, chaosDigestUser, len(feeds))
	if err != nil {
		return err
	}
	sch, err := digest.ParseSchedule(chaosDigestSchedule, "UTC")
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	ds := make([]store.Digest, len(users))
	for i, u := range users {
		ds[i] = store.Digest{UserID: u.ID, Name: "chaos", Schedule: chaosDigestSchedule, Timezone: "UTC",
			NextSlotAt: sch.Next(now), CreatedAt: now, Channel: model.ChannelEmail}
	}
	if err := create(ctx, c.s.st, ds, nil); err != nil {
		return err
	}
	subs := make([]store.Subscription, len(feeds))
	for j, f := range feeds {
		d := ds[j/feedsPerPerson]
		subs[j] = store.Subscription{UserID: d.UserID, FeedID: f, DigestID: &d.ID, State: store.SubActive,
			CreatedAt: now, ConfirmedAt: &now, Channel: model.ChannelEmail}
	}
	return create(ctx, c.s.st, subs, nil)
}

// seedHooks subscribes each webhook person's feeds to a webhook at
// /h/<person> on the receivers' switch.
func (c *chaos) seedHooks(ctx context.Context, feeds []int64) error {
	users, err := c.chaosUsers(ctx, "chaoshook", len(feeds))
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	subs := make([]store.Subscription, len(feeds))
	for j, f := range feeds {
		u := users[j/feedsPerPerson]
		secret, err := webhook.NewSecret()
		if err != nil {
			return err
		}
		subs[j] = store.Subscription{UserID: u.ID, FeedID: f, State: store.SubActive, CreatedAt: now, ConfirmedAt: &now,
			Channel: webhook.Name, Target: c.hooks.URL() + "/h/" + strconv.FormatInt(u.ID, 10), ChannelSecret: secret}
	}
	return create(ctx, c.s.st, subs, nil)
}

// loadReaders reads back every active subscription as the oracle's
// readers: feed URL → reader ids (an email address, or a webhook's path).
func (c *chaos) loadReaders(ctx context.Context) error {
	var rows []struct {
		URL, Email, Channel, Target string
		Digest                      bool
	}
	err := c.s.st.DB.WithContext(ctx).Raw(`SELECT f.url, u.email, s.channel, s.target, s.digest_id IS NOT NULL AS digest FROM subscriptions s
JOIN feeds f ON f.id = s.feed_id JOIN users u ON u.id = s.user_id WHERE s.state = ?`, store.SubActive).Scan(&rows).Error
	if err != nil {
		return fmt.Errorf("read the readers back: %w", err)
	}
	for _, r := range rows {
		id := mailReader(r.Email)
		if r.Channel == webhook.Name {
			id = hookReader(strings.TrimPrefix(r.Target, c.hooks.URL()))
		}
		c.readers[r.URL] = append(c.readers[r.URL], id)
		switch {
		case r.Digest:
			c.rep.Readers["digest email"]++
		case r.Channel == webhook.Name:
			c.rep.Readers["webhook"]++
		default:
			c.rep.Readers["instant email"]++
		}
	}
	return nil
}
