package poller

import (
	"context"
	"time"

	"github.com/feedmail/feedmail/internal/newitems"
	"github.com/feedmail/feedmail/internal/store"
)

// selectItems finds the items of parsed that the feed has not recorded
// (one query) and decides which are delivered: none on the feed's first
// successful parse, else newitems.Select's verdicts.
func (p *Poller) selectItems(ctx context.Context, f store.Feed, parsed *newitems.Feed, now time.Time) ([]store.NewItem, int, error) {
	if len(parsed.Items) == 0 {
		return nil, 0, nil
	}
	if f.PrimedAt == nil {
		// First parse: everything is recorded as seen and nothing mailed, so
		// there is no need to ask which items are known (one that is, say,
		// copied here by a merge is skipped by the insert's ON CONFLICT).
		out := make([]store.NewItem, len(parsed.Items))
		for i, it := range parsed.Items {
			out[i] = toStoreItem(it, store.IgnoredFirstPoll)
		}
		return out, 0, nil
	}
	ids := make([]string, len(parsed.Items))
	for i, it := range parsed.Items {
		ids[i] = it.Identity
	}
	known, err := p.st.KnownIdentities(ctx, f.ID, ids)
	if err != nil {
		return nil, 0, err
	}
	var cands []newitems.Item
	for _, it := range parsed.Items {
		if !known[it.Identity] {
			cands = append(cands, it)
		}
	}
	if len(cands) == 0 {
		return nil, 0, nil
	}
	out := make([]store.NewItem, len(cands))
	deliver := 0
	var newest time.Time
	if f.NewestItemDate != nil {
		newest = *f.NewestItemDate
	}
	for i, v := range newitems.Select(cands, parsed.Items, newest, now) {
		out[i] = toStoreItem(v.Item, string(v.Ignored))
		if v.Deliver() {
			deliver++
		}
	}
	return out, deliver, nil
}

func toStoreItem(it newitems.Item, rule string) store.NewItem {
	ni := store.NewItem{Identity: it.Identity, GUID: it.GUID, Link: it.Link, Title: it.Title,
		Content: it.ContentHTML, Author: it.Author, IgnoredRule: rule, Media: storeMedia(it.Media)}
	if !it.Published.IsZero() {
		t := it.Published
		ni.PublishedAt = &t
	}
	return ni
}

// storeMedia is the stored form of an item's media.
func storeMedia(m newitems.Media) store.ItemMedia {
	sm := store.ItemMedia{Thumbnail: m.Thumbnail, Description: m.Description, DescriptionHTML: m.DescriptionHTML}
	for _, e := range m.Enclosures {
		sm.Enclosures = append(sm.Enclosures, store.Enclosure{URL: e.URL, Type: e.Type, Length: e.Length, Duration: e.Duration})
	}
	return sm
}

// maxItemFuture is how far in the future an item date may be and still count
// for newest_item_date.
const maxItemFuture = 24 * time.Hour

// newestItemDate is the newest item date not more than maxItemFuture after now.
func newestItemDate(items []newitems.Item, now time.Time) *time.Time {
	var best time.Time
	for _, it := range items {
		if d := it.Published; !d.IsZero() && !d.After(now.Add(maxItemFuture)) && d.After(best) {
			best = d
		}
	}
	if best.IsZero() {
		return nil
	}
	return &best
}
