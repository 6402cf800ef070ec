package poller

import (
	"context"
	"time"

	"github.com/feedmail/feedmail/internal/model"
	"github.com/feedmail/feedmail/internal/newitems"
	"github.com/feedmail/feedmail/internal/store"
)

// selectItems finds the items of parsed that the feed has not recorded
// (one query) and decides which are delivered: none on the feed's first
// successful parse, else newitems.Select's verdicts. It also returns the
// known items whose fingerprint changed (edited posts, see editsOf).
func (p *Poller) selectItems(ctx context.Context, f store.Feed, parsed *newitems.Feed, now time.Time) ([]store.NewItem, []store.ItemEdit, int, error) {
	if len(parsed.Items) == 0 {
		return nil, nil, 0, nil
	}
	if f.PrimedAt == nil {
		// First parse: everything is recorded as seen and nothing mailed, so
		// there is no need to ask which items are known (one that is, say,
		// copied here by a merge is skipped by the insert's ON CONFLICT).
		out := make([]store.NewItem, len(parsed.Items))
		for i, it := range parsed.Items {
			out[i] = toStoreItem(it, store.IgnoredFirstPoll)
		}
		return out, nil, 0, nil
	}
	ids := make([]string, len(parsed.Items))
	for i, it := range parsed.Items {
		ids[i] = it.Identity
	}
	known, err := p.st.KnownItemHashes(ctx, f.ID, ids)
	if err != nil {
		return nil, nil, 0, err
	}
	var cands []newitems.Item
	for _, it := range parsed.Items {
		if _, ok := known[it.Identity]; !ok {
			cands = append(cands, it)
		}
	}
	edits := editsOf(parsed.Items, known)
	if len(cands) == 0 {
		return nil, edits, 0, nil
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
	return out, edits, deliver, nil
}

// editsOf returns the items of a poll the feed knows (known: identity →
// stored fingerprint) whose fingerprint differs from the stored one: an
// edit, or a fill for an item stored without one. An identity repeated in
// the feed counts once, its first occurrence.
func editsOf(items []newitems.Item, known map[string]string) []store.ItemEdit {
	var edits []store.ItemEdit
	var done map[string]bool
	for _, it := range items {
		stored, ok := known[it.Identity]
		if !ok || done[it.Identity] {
			continue
		}
		if done == nil {
			done = make(map[string]bool)
		}
		done[it.Identity] = true
		ni := toStoreItem(it, "")
		if ni.ContentHash == stored {
			continue
		}
		edits = append(edits, store.ItemEdit{Identity: it.Identity, Title: ni.Title, Content: ni.Content,
			Media: ni.Media, ContentHash: ni.ContentHash, Fill: stored == ""})
	}
	return edits
}

// StoredForm returns item it as a poll stores it: what a preview of a
// feed not polled composes from, so its email is the one a poll's would be.
func StoredForm(it newitems.Item) store.NewItem { return toStoreItem(it, "") }

func toStoreItem(it newitems.Item, rule string) store.NewItem {
	ni := store.NewItem{Identity: it.Identity, GUID: it.GUID, Link: it.Link, Title: it.Title,
		Content: it.ContentHTML, Author: it.Author, IgnoredRule: rule, Media: storeMedia(it.Media)}
	ni.ContentHash = store.Fingerprint(ni.Title, ni.Content, ni.Media)
	if !it.Published.IsZero() {
		t := it.Published
		ni.PublishedAt = &t
	}
	return ni
}

// storeMedia is the stored form of an item's media.
func storeMedia(m newitems.Media) model.ItemMedia {
	sm := model.ItemMedia{Thumbnail: m.Thumbnail, Description: m.Description, DescriptionHTML: m.DescriptionHTML,
		Player: m.Player}
	for _, e := range m.Enclosures {
		sm.Enclosures = append(sm.Enclosures, model.Enclosure{URL: e.URL, Type: e.Type, Length: e.Length, Duration: e.Duration})
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
