package farm

import (
	"strconv"
	"time"
)

// The items of a feed: generated ones kept as (number, date) and rebuilt
// when asked for, given ones kept whole.

// genRef is generated item k dated date (none if undated), as kept.
func genRef(k int, date time.Time, undated bool) item {
	if undated {
		return item{gen: k, pub: noDate}
	}
	return item{gen: k, pub: date.Unix()}
}

// keep appends refs to copies of items, filled in (fillItem), to refs and
// the copies to kept, and returns both.
func (f *Feed) keep(refs []item, kept, items []Item) ([]item, []Item) {
	for _, it := range items {
		f.fillItem(&it)
		kept = append(kept, it)
		refs = append(refs, item{gen: -len(kept)})
	}
	return refs, kept
}

// itemsOf returns the items of st, newest first.
func (f *Feed) itemsOf(st *state) []Item { return f.itemsN(st, len(st.items)) }

// itemsN returns the first n items of st (all if fewer), newest first.
func (f *Feed) itemsN(st *state, n int) []Item {
	out := make([]Item, min(n, len(st.items)))
	url := f.URL()
	for i, r := range st.items[:len(out)] {
		switch {
		case r.gen < 0:
			out[i] = st.kept[-r.gen-1]
		case r.pub == noDate:
			out[i] = genItemOf(f.id, url, r.gen, time.Time{}, true)
		default:
			out[i] = genItemOf(f.id, url, r.gen, time.Unix(r.pub, 0), false)
		}
	}
	return out
}

func (f *Feed) genItem(k int, date time.Time, undated bool) Item {
	return genItemOf(f.id, f.URL(), k, date, undated)
}

// genItemOf returns item k of feed id at url, dated date unless undated.
func genItemOf(id int, url string, k int, date time.Time, undated bool) Item {
	ks, ids := strconv.Itoa(k), strconv.Itoa(id)
	it := Item{
		ID:      "farm:f" + ids + ":i" + ks,
		Title:   "Item " + ks + " of feed " + ids,
		Link:    url + "/i/" + ks,
		Content: "<p>Item " + ks + " of feed " + ids + ", posted on the feed farm.</p>",
	}
	if !undated {
		it.Published = date.UTC().Truncate(time.Second)
	}
	return it
}

func (f *Feed) fillItem(it *Item) {
	if it.ID == "" {
		it.ID = "farm:f" + strconv.Itoa(f.id) + ":i" + strconv.Itoa(f.nextItem)
		f.nextItem++
	}
	if it.Title == "" {
		it.Title = it.ID
	}
	if !it.Published.IsZero() {
		it.Published = it.Published.UTC()
	}
}
