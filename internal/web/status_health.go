package web

import (
	"time"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/poller"
)

// healthWords says in a sentence what feed f is to its readers when it
// is not simply healthy (poller.Health), and where rediscovery stands;
// "" for a healthy feed.
func healthWords(f *store.Feed, now time.Time) string {
	var s string
	since := "recently"
	if f.ErrorsSince != nil {
		since = fmtTime(*f.ErrorsSince)
	}
	switch poller.Health(f, now) {
	case "ailing":
		s = "Ailing: failing since " + since + ", longer than an outage. feedmail looks for the feed at a new address."
	case "failing":
		s = "Failing since " + since + ": feedmail waits before it looks for a new address, in case this is an outage."
	case "frozen":
		s = "Frozen: it still answers, but its site advertises a newer feed."
	case "moved":
		return "Moved: its readers now get it from its new address."
	default:
		return ""
	}
	switch f.RecoveryState {
	case store.RecoveryOffered:
		s += " Its readers were offered its probable new address."
	case store.RecoveryTold:
		s += " Nothing was found so far; its readers were told, and feedmail keeps trying."
	}
	if f.RecoveryNextAt != nil && f.RecoveryNextAt.After(now) {
		s += " Next look: " + fmtTime(*f.RecoveryNextAt) + "."
	}
	return s
}
