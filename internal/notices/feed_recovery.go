package notices

import (
	"strconv"
	"strings"
	"time"

	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/store"
)

// ReaderChoice is one of a person's subscriptions in a move or an offer:
// the reader move id (for the follow or undo button) and the subscription
// (for its unsubscribe button).
type ReaderChoice struct {
	ReaderMoveID   int64
	SubscriptionID int64
}

// FeedMovedKey is the dedupe key of the "your feed moved" notice of move
// moveID to userID: once per move and person.
func FeedMovedKey(moveID, userID int64) string {
	return "moved:" + strconv.FormatInt(moveID, 10) + ":" + strconv.FormatInt(userID, 10)
}

// FeedMoved tells userID that feed from now comes from to, found by
// foundBy (a rediscovery with posts in common, or the publisher or the
// operator moving it): what changed, and buttons to go back (undo) or
// stop, one pair per subscription moved.
func FeedMoved(l *links.Links, now time.Time, from store.Feed, to, why string, userID int64, choices []ReaderChoice) store.Notice {
	name := feedName(from)
	n := feedEndNotice(l, now, from, userID,
		"A feed you follow moved: "+name,
		"The feed "+name+" moved from\n"+from.URL+"\nto\n"+to+"\n\n"+why+"\n\n"+
			"feedmail now fetches it at the new address: you do not need to do anything, "+
			"and no post will reach you twice. If this is not the feed you want, go back to the old address or unsubscribe.")
	if l != nil && l.Tokens != nil {
		n.Links = append(choiceLinks(l, choices, "Undo: keep the old address", l.UndoMove), n.Links...)
	}
	return n
}

// FeedOfferedKey is the dedupe key of the offer of move moveID to userID.
func FeedOfferedKey(moveID, userID int64) string {
	return "offered:" + strconv.FormatInt(moveID, 10) + ":" + strconv.FormatInt(userID, 10)
}

// FeedOffered asks userID whether to follow feed from at to, which is
// probably its new address (same site, no post in common: a new platform
// that numbered its posts anew). Nothing moves without the click.
func FeedOffered(l *links.Links, now time.Time, from store.Feed, to, why string, userID int64, choices []ReaderChoice) store.Notice {
	name := feedName(from)
	n := feedEndNotice(l, now, from, userID,
		"Has this feed moved? "+name,
		"The feed "+name+" ("+from.URL+") "+failingWords(from)+". Its site now has a feed at\n"+to+"\n\n"+why+"\n\n"+
			"It shares no post with the old feed, so feedmail will not move you there without your say. "+
			"Follow the new address with one click (no new confirmation, nothing you already received is sent again), "+
			"or stop following this feed.")
	if l != nil && l.Tokens != nil {
		n.Links = append(choiceLinks(l, choices, "Follow the new address", l.Follow), n.Links...)
	}
	return n
}

// FeedAilingKey is the dedupe key of the "nothing found" notice of feed f
// to userID: once per person and error episode (the day errors began).
func FeedAilingKey(f store.Feed, userID int64) string {
	since := ""
	if f.ErrorsSince != nil {
		since = f.ErrorsSince.UTC().Format("2006-01-02")
	}
	return "ailing:" + strconv.FormatInt(f.ID, 10) + ":" + since + ":" + strconv.FormatInt(userID, 10)
}

// FeedAiling tells userID that feed f has failed for about a week, what
// failed and what feedmail tried to find it elsewhere. Their
// subscription stays: feedmail keeps trying, and delivery resumes by
// itself if the feed comes back or is found.
func FeedAiling(l *links.Links, now time.Time, f store.Feed, tried []string, userID int64, subIDs []int64) store.Notice {
	name := feedName(f)
	text := "The feed " + name + " (" + f.URL + ") " + failingWords(f) + ".\n\n"
	if len(tried) > 0 {
		text += "feedmail looked for it elsewhere and found nothing. It tried:\n" + strings.Join(tried, "\n") + "\n\n"
	}
	text += "Your subscription is kept and no credits are used while nothing arrives. " +
		"feedmail keeps trying, less and less often, and delivers again by itself if the feed comes back or turns up at a new address. " +
		"To keep waiting, do nothing."
	n := feedEndNotice(l, now, f, userID, "A feed you follow has stopped working: "+name, text)
	if l != nil && l.Tokens != nil {
		for _, id := range subIDs {
			n.Links = append(n.Links, store.NoticeLink{Label: "Unsubscribe", URL: l.Unsubscribe(id)})
		}
	}
	return n
}

// failingWords says since when and how feed f fails, or that it stopped
// changing.
func failingWords(f store.Feed) string {
	if f.ConsecutiveErrors == 0 || f.ErrorsSince == nil {
		if f.LastNewItemAt != nil {
			return "has had no new post since " + day(*f.LastNewItemAt)
		}
		return "has had no new post for a long time"
	}
	last := f.LastError
	if last == "" && f.LastStatus != 0 {
		last = strconv.Itoa(f.LastStatus)
	}
	return "has failed since " + day(*f.ErrorsSince) + " (last: " + last + ")"
}

// choiceLinks is one button per choice (labelled label, numbered when
// there are several) and one unsubscribe button per choice.
func choiceLinks(l *links.Links, choices []ReaderChoice, label string, url func(int64) string) []store.NoticeLink {
	var out []store.NoticeLink
	for i, c := range choices {
		lab, stop := label, "Unsubscribe"
		if len(choices) > 1 {
			k := " (" + strconv.Itoa(i+1) + ")"
			lab, stop = label+k, stop+k
		}
		out = append(out, store.NoticeLink{Label: lab, URL: url(c.ReaderMoveID)},
			store.NoticeLink{Label: stop, URL: l.Unsubscribe(c.SubscriptionID)})
	}
	return out
}
