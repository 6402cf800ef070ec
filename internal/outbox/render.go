package outbox

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wneessen/go-mail"

	"github.com/feedmail/feedmail/internal/model"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/mailer"
)

// render makes every unsettled job ready to hand over, by its way,
// several at a time. Item rows are loaded in bulk first, with the
// articles their formats wait for (articlesOf), the same for every way.
func (o *Outbox) render(ctx context.Context, jobs []*job, now time.Time) {
	var items []*store.OutboxRow
	for _, j := range jobs {
		if !j.done && j.err == nil && j.row.Kind == store.KindItem && j.way.loadsItem() {
			items = append(items, j.row)
		}
	}
	in := &renderInput{now: now, memo: &renderMemo{}}
	if len(items) > 0 {
		var err error
		if in.deliveries, err = o.cfg.Store.ItemDeliveries(ctx, items); err != nil {
			for _, j := range jobs {
				if j.row.Kind == store.KindItem && j.err == nil {
					j.err = fmt.Errorf("%w: load item: %v", mailer.ErrTemporary, err)
				}
			}
		}
	}
	in.articles = o.articlesOf(ctx, jobs, in.deliveries, now)
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for _, j := range jobs {
		if j.done || j.err != nil {
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			j.err = j.way.render(ctx, j, in)
		})
	}
	wg.Wait()
}

// setReturnPath makes the envelope sender of j's message the row's own
// bounce address, so a late bounce names the email; without a bounce
// address the From address stays the envelope sender.
func (o *Outbox) setReturnPath(j *job) error {
	addr := o.cfg.Links.ReturnAddress(j.row.ID)
	if addr == "" {
		return nil
	}
	if err := j.msg.EnvelopeFrom(addr); err != nil {
		return fmt.Errorf("%w: outbox %d: envelope sender: %w", mailer.ErrPermanent, j.row.ID, err)
	}
	return nil
}

// recipient is the row's address, else the person's current one.
func recipient(row *store.OutboxRow, u *store.User) string {
	if strings.TrimSpace(row.Address) != "" {
		return row.Address
	}
	if u != nil {
		return u.Email
	}
	return ""
}

// renderItem composes an instant email; the post's part of it is made
// once per pass for all its readers in the same format (memo).
func (o *Outbox) renderItem(row *store.OutboxRow, u *store.User, d store.ItemDelivery, in *renderInput) (*mail.Msg, error) {
	now := in.now
	if d.Subscription.State != store.SubActive {
		return nil, fmt.Errorf("%w: subscription %d is %s", ErrCancelled, d.Subscription.ID, d.Subscription.State)
	}
	it := d.Item
	var loc *time.Location
	if u != nil {
		loc = in.memo.location(u.Timezone)
	}
	e := mailer.ItemEmailOf(o.cfg.Sender, o.cfg.Links, d.Feed, it, d.Subscription.ID, d.Subscription.Format, loc, now)
	e.To = recipient(row, u)
	mailer.WithArticle(&e, it.ID, in.articles)
	if l := o.cfg.Links; l.Base != "" && l.Tokens != nil {
		e.Footer.ManageURL = l.Account(row.UserID, now)
		e.Footer.UnsubscribeURL = l.Unsubscribe(d.Subscription.ID)
		e.Footer.UnsubscribeMailto = l.UnsubscribeMailto(row.ID)
	}
	p := in.memo.post(postKey{item: it.ID, format: e.Format}, func() *mailer.ItemPost { return mailer.NewItemPost(e) })
	m, err := o.cfg.Sender.ItemFor(e, p)
	if err != nil {
		return nil, fmt.Errorf("%w: outbox %d: %w", mailer.ErrPermanent, row.ID, err)
	}
	return m, nil
}

// renderNotice composes a free notice from the row's payload.
func (o *Outbox) renderNotice(_ context.Context, row *store.OutboxRow) (*mail.Msg, error) {
	n, err := store.NoticeOf(row)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", mailer.ErrPermanent, err)
	}
	e := mailer.NoticeEmailOf(n, row.Address, o.cfg.Sender.MessageID("notice-"+strconv.FormatInt(row.ID, 10)), o.cfg.Clock.Now())
	m, err := o.cfg.Sender.Notice(e)
	if err != nil {
		return nil, fmt.Errorf("%w: outbox %d: %w", mailer.ErrPermanent, row.ID, err)
	}
	return m, nil
}

// warmUp composes and serializes one message of each built-in form before
// any worker goroutine exists. It front-loads template parsing, and it
// fills the process-wide caches that templates fill on first use (reflect's
// function layouts, behind a sync.Map) from this goroutine, so that
// concurrent renders later only read them. Under the race detector with
// some packages built uninstrumented (scripts/test.sh), sync.Map's
// synchronisation can be invisible and a first fill from two goroutines at
// once is reported as a race. Errors are ignored: real rows report theirs.
func (o *Outbox) warmUp() {
	s := o.cfg.Sender
	date := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	footer := mailer.Footer{FeedTitle: "Warm-up", FeedURL: "https://example.com/feed", SiteURL: "https://example.com/",
		ManageURL: "https://example.com/account/x", UnsubscribeURL: "https://example.com/unsubscribe/x", StatusURL: "https://example.com/status"}
	html := `<p>Text <a href="/a">link</a> <b>bold</b><br>line</p><ul><li>one</li></ul><ol><li>two</li></ol>` +
		`<blockquote><p>quote</p></blockquote><pre>code</pre><img src="/i.png" alt="alt">`
	var msgs []*mail.Msg
	if m, err := s.Item(mailer.ItemEmail{To: "warm@example.com", FeedTitle: "Warm-up", FeedURL: footer.FeedURL, ListID: s.FeedListID(1),
		MessageID: s.ItemMessageID(1, 1), Date: date, ItemTitle: "Title", ItemLink: "https://example.com/p", ItemHTML: html,
		Author: "Author", Published: date, Footer: footer,
		Media: model.ItemMedia{Enclosures: []model.Enclosure{{URL: "https://example.com/e.mp3", Type: "audio/mpeg", Length: 1, Duration: 1}}}}); err == nil {
		msgs = append(msgs, m)
	}
	if m, err := s.Digest(mailer.DigestEmail{To: "warm@example.com", DigestName: "Morning", MessageID: s.MessageID("digest.0"), Date: date,
		Feeds: []mailer.DigestFeed{
			{Title: "A", SiteURL: "https://a.example.com/", Items: []mailer.DigestItem{{Title: "1", Link: "https://a.example.com/1", ExcerptHTML: html, Published: date,
				Enclosures: []model.Enclosure{{URL: "https://a.example.com/e.mp3", Type: "audio/mpeg"}}}}},
			{Title: "B", SiteURL: "https://b.example.com/", Items: []mailer.DigestItem{{Title: "2", Link: "https://b.example.com/2", ExcerptHTML: "x"}, {Title: "3"}}},
		}, Footer: footer, ListID: s.DigestListID(1)}); err == nil {
		msgs = append(msgs, m)
	}
	if m, err := s.Notice(mailer.NoticeEmail{To: "warm@example.com", Subject: "Warm-up", Text: "One.\n\nTwo\nlines.",
		Links:     []mailer.Link{{Label: "A", URL: "https://example.com/a"}, {Label: "B", URL: "https://example.com/b"}},
		MessageID: s.MessageID("notice.0"), Date: date}); err == nil {
		msgs = append(msgs, m)
	}
	for _, m := range msgs {
		_, _ = mailer.Render(m)
	}
}
