package notices

import (
	"strconv"
	"time"

	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/store"
)

// TargetGoneKey is the dedupe key of the "target is gone" notice of a
// subscription (what "sub") or a digest (what "digest") id: once each.
func TargetGoneKey(what string, id int64) string {
	return "target-gone:" + what + ":" + strconv.FormatInt(id, 10)
}

// TargetGone tells userID that the channel target of name (a feed's title,
// or a digest's name) answered that it no longer exists, and that its
// delivery ended, as a hard bounce ends email. l may be nil (no buttons).
func TargetGone(l *links.Links, now time.Time, userID int64, channelName, name, answer string) store.Notice {
	n := store.Notice{
		Subject: "Delivery to " + channelName + " stopped: " + name,
		Text: "The " + channelName + " target of \"" + name + "\" answered \"" + answer + "\": it no longer exists.\n\n" +
			"That delivery has ended and no credits will be used for it. " +
			"To go on receiving these posts, subscribe again with a new target, or by email.",
	}
	if l != nil && l.Tokens != nil {
		n.Links = append(n.Links, store.NoticeLink{Label: "Your subscriptions", URL: l.Account(userID, now)})
	}
	return n
}
