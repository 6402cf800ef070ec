package bench

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"
)

// The oracle says what was lost or came twice; this file says why, from
// feedmail's own tables (read only here, never to judge): for each feed
// with a lost post, its state and every poll since the window opened, and
// each lost delivery's item and outbox rows. For each copy twice outside
// the window, the times of its copies and the faults around them.

// maxExplained is how many feeds and duplicates the report explains.
const maxExplained = 20

// explainLost returns lines on the feeds of the lost deliveries in lost
// ("reader ← link"), posts mapping a link to its feed's URL.
func (c *chaos) explainLost(ctx context.Context, lost []string, posts []post) ([]string, error) {
	feedOf := make(map[string]string, len(posts))
	for _, p := range posts {
		feedOf[p.Link] = p.Feed
	}
	links := map[string][]string{} // feed URL → its lost links
	for _, l := range lost {
		_, link, ok := strings.Cut(l, " ← ")
		if !ok || feedOf[link] == "" {
			continue
		}
		f := feedOf[link]
		if !slices.Contains(links[f], link) {
			links[f] = append(links[f], link)
		}
	}
	feeds := slices.Sorted(maps.Keys(links))
	var out []string
	for i, f := range feeds {
		if i == maxExplained {
			out = append(out, fmt.Sprintf("… and %d more feeds", len(feeds)-i))
			break
		}
		lines, err := c.explainFeed(ctx, f, links[f])
		if err != nil {
			return out, err
		}
		out = append(out, lines...)
	}
	return out, nil
}

// explainFeed returns the lines on one feed: its row now, its polls since
// the window opened, and each lost link's item and outbox rows.
func (c *chaos) explainFeed(ctx context.Context, url string, links []string) ([]string, error) {
	db := c.s.st.DB.WithContext(ctx)
	var f struct {
		ID                int64
		State             string
		NextPollAt        time.Time
		PollReason        string
		ConsecutiveErrors int
		LastStatus        int
		LastError         string
		LeaseOwner        string
	}
	if err := db.Raw(`SELECT id, state, next_poll_at, poll_reason, consecutive_errors, last_status, last_error, lease_owner
FROM feeds WHERE url = ?`, url).Scan(&f).Error; err != nil {
		return nil, fmt.Errorf("explain feed %s: %w", url, err)
	}
	at := func(t time.Time) string { return t.UTC().Format("15:04:05") }
	out := []string{fmt.Sprintf("%s (feed %d, %s): next poll %s (%s), %d errors, last status %d %q, lease %q",
		url, f.ID, f.State, at(f.NextPollAt), f.PollReason, f.ConsecutiveErrors, f.LastStatus, f.LastError, f.LeaseOwner)}
	var polls []struct {
		PolledAt time.Time
		Status   int
		Outcome  string
		NewItems int
		Reason   string
	}
	if err := db.Raw(`SELECT polled_at, status, outcome, new_items, reason FROM poll_log
WHERE feed_id = ? AND polled_at >= ? ORDER BY polled_at`, f.ID, c.w0.Add(-DefaultCadence)).Scan(&polls).Error; err != nil {
		return nil, fmt.Errorf("explain feed %d's polls: %w", f.ID, err)
	}
	for _, p := range polls {
		out = append(out, fmt.Sprintf("  poll %s: %d %s, %d new; %s", at(p.PolledAt), p.Status, p.Outcome, p.NewItems, p.Reason))
	}
	for _, l := range links {
		lines, err := c.explainItem(ctx, f.ID, l)
		if err != nil {
			return nil, err
		}
		out = append(out, lines...)
	}
	return out, nil
}

// explainItem returns the lines on one lost post: whether feedmail saw it,
// and its outbox rows.
func (c *chaos) explainItem(ctx context.Context, feedID int64, link string) ([]string, error) {
	db := c.s.st.DB.WithContext(ctx)
	var items []struct {
		ID     int64
		SeenAt time.Time
	}
	if err := db.Raw(`SELECT id, seen_at FROM items WHERE feed_id = ? AND link = ?`, feedID, link).Scan(&items).Error; err != nil {
		return nil, fmt.Errorf("explain item %s: %w", link, err)
	}
	if len(items) == 0 {
		return []string{"  post " + link + ": never seen by a poll"}, nil
	}
	var rows []struct {
		ID        int64
		Kind      string
		Channel   string
		State     string
		Attempts  int
		LastError string
	}
	if err := db.Raw(`SELECT id, kind, channel, state, attempts, last_error FROM outbox WHERE item_id = ?`, items[0].ID).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("explain item %d's outbox rows: %w", items[0].ID, err)
	}
	out := []string{fmt.Sprintf("  post %s: seen %s, %d outbox rows", link, items[0].SeenAt.UTC().Format("15:04:05"), len(rows))}
	for _, r := range rows {
		out = append(out, fmt.Sprintf("    outbox %d %s/%s %s after %d attempts %q", r.ID, r.Kind, r.Channel, r.State, r.Attempts, r.LastError))
	}
	return out, nil
}

// explainTwice returns a line for each delivery twice outside the window
// (up to maxExplained): when each copy came, which were dropped after the
// dot or hung up on, and the faults from a minute before the first copy to
// the last.
func explainTwice(twice []string, recs []reception, faults []fault) []string {
	want := map[delivery]bool{}
	for _, l := range twice {
		if r, link, ok := strings.Cut(l, " ← "); ok {
			want[delivery{link, r}] = true
		}
	}
	got := map[delivery][]reception{}
	for _, r := range recs {
		for _, l := range r.Links {
			if d := (delivery{l, r.Reader}); want[d] {
				got[d] = append(got[d], r)
			}
		}
	}
	keys := slices.SortedFunc(maps.Keys(got), delivery.compare)
	var out []string
	for i, d := range keys {
		if i == maxExplained {
			break
		}
		cs := got[d]
		sort.Slice(cs, func(a, b int) bool { return cs[a].At.Before(cs[b].At) })
		var parts []string
		for _, r := range cs {
			s := r.At.UTC().Format("15:04:05.000") + " " + r.Key
			if r.Dropped {
				s += " (reply lost)"
			}
			parts = append(parts, s)
		}
		var near []string
		for _, f := range faults {
			if !f.At.Before(cs[0].At.Add(-time.Minute)) && !f.At.After(cs[len(cs)-1].At) {
				near = append(near, f.At.UTC().Format("15:04:05.0")+" "+f.Kind+": "+f.Detail)
			}
		}
		out = append(out, fmt.Sprintf("%s ← %s: %s; faults: %s", d.reader, d.link, strings.Join(parts, ", "), strings.Join(near, "; ")))
	}
	return out
}
