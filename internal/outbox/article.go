package outbox

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/feedmail/feedmail/internal/article"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/mailer"
)

// articleRecheck is how soon an email waiting for its article is looked
// at again.
const articleRecheck = 10 * time.Second

// Emails of subscriptions in the "article" format wait for their post's
// article (fetched once for all readers by the poller, see package
// article) for at most article.Wait from when the email was queued: until
// then a row whose article is not settled goes back to the queue unsent,
// no attempt counted; after it, or once the fetch failed, the email goes
// out with the feed's own content and a line saying so.

// articlesOf returns the articles of the claimed item rows whose
// subscription wants one, keyed by item, and puts back the rows still
// waiting for theirs (settled: done). Rows that want no article cost
// nothing: without any, no query runs.
func (o *Outbox) articlesOf(ctx context.Context, jobs []*job, ds map[int64]store.ItemDelivery, now time.Time) map[int64]store.ItemArticle {
	var want []*job
	var ids []int64
	for _, j := range jobs {
		// A post without a link has no page: its email goes out at once.
		if d, ok := ds[j.row.ID]; ok && !j.done && j.err == nil && d.Subscription.Format == store.FormatArticle &&
			strings.TrimSpace(d.Item.Link) != "" {
			want = append(want, j)
			ids = append(ids, d.Item.ID)
		}
	}
	if len(want) == 0 {
		return nil
	}
	arts, err := o.cfg.Store.ItemArticles(ctx, ids)
	if err == nil {
		err = o.cfg.Store.WantArticles(ctx, missingArticles(ids, arts))
	}
	if err != nil {
		for _, j := range want {
			j.err = fmt.Errorf("%w: load article: %v", mailer.ErrTemporary, err)
		}
		return nil
	}
	var wait []*job
	for _, j := range want {
		d := ds[j.row.ID]
		a, ok := arts[d.Item.ID]
		if (!ok || a.State == store.ArticlePending) && now.Before(j.row.CreatedAt.Add(article.Wait)) {
			wait = append(wait, j)
		}
	}
	o.waitForArticles(ctx, wait, now)
	return arts
}

// missingArticles returns the items of ids without an article row.
func missingArticles(ids []int64, arts map[int64]store.ItemArticle) []int64 {
	var out []int64
	for _, id := range ids {
		if _, ok := arts[id]; !ok {
			out = append(out, id)
		}
	}
	return out
}

// waitForArticles puts jobs back in the queue, due in articleRecheck.
func (o *Outbox) waitForArticles(ctx context.Context, jobs []*job, now time.Time) {
	if len(jobs) == 0 {
		return
	}
	ids := make([]int64, len(jobs))
	for i, j := range jobs {
		ids[i] = j.row.ID
	}
	if _, err := o.cfg.Store.WaitOutboxForArticles(ctx, o.cfg.Owner, ids, now.Add(articleRecheck)); err != nil {
		for _, j := range jobs {
			j.err = fmt.Errorf("%w: wait for article: %v", mailer.ErrTemporary, err)
		}
		return
	}
	for _, j := range jobs {
		j.done = true
	}
}
