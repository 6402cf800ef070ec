package notices

import (
	"github.com/feedmail/feedmail/billing"
	"strconv"
	"time"

	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/store"
)

// OwnerLapse returns the notices of an owner-paid feed whose owner's
// credits ran out (store.NotifyOwnerLapses, SweepOwnerLapses): to each
// reader once per lapse, to the owner once per lapse, and to each reader
// unsubscribed at the end of the notice period. Buttons need l.Base and
// l.Tokens; with paymentsOn the owner's notice links to buying credits.
func OwnerLapse(l links.Links, now time.Time, paymentsOn bool) store.LapseNotices {
	return store.LapseNotices{
		Reader: func(f store.Feed, sub store.Subscription, seq int, deadline time.Time) (string, store.Notice) {
			return ownerKey("owner-lapse", f.ID, int64(seq), sub.ID), ownerLapseReader(l, now, f, sub.UserID, deadline)
		},
		Owner: func(f store.Feed, owner int64, seq int, deadline time.Time) (string, store.Notice) {
			return ownerKey("owner-out", f.ID, int64(seq), owner), ownerLapseOwner(l, now, f, owner, deadline, paymentsOn)
		},
		Ended: func(f store.Feed, sub store.Subscription) (string, store.Notice) {
			return ownerKey("owner-ended", f.ID, sub.ID, sub.UserID), ownerLapseEnded(l, now, f, sub.UserID)
		},
	}
}

// ownerKey joins a notice kind and its ids: "kind:a:b:c".
func ownerKey(kind string, ids ...int64) string {
	for _, id := range ids {
		kind += ":" + strconv.FormatInt(id, 10)
	}
	return kind
}

func day(t time.Time) string { return t.UTC().Format("2 January 2006") }

func ownerLapseReader(l links.Links, now time.Time, f store.Feed, userID int64, deadline time.Time) store.Notice {
	name := feedName(f)
	n := store.Notice{
		Subject: "The publisher of " + name + " no longer pays for your emails",
		Text: "The publisher of " + name + " (" + f.URL + ") paid for your emails from it, and their credits have run out.\n\n" +
			"Until " + day(deadline) + " you keep getting it free of charge. To keep it after that, open your account " +
			"and choose \"I'll pay for it myself\": it then costs you what any feed costs (" + billing.Standard().PostCost() + " per email, or its " +
			"share of your digest). If you do nothing, your subscription to it ends on " + day(deadline) + ".\n\n" +
			"If the publisher adds credits before then, they pay again and you need not do anything.",
	}
	if l.Base != "" && l.Tokens != nil {
		n.Links = append(n.Links, store.NoticeLink{Label: "Open my account", URL: l.Account(userID, now)})
	}
	return n
}

func ownerLapseOwner(l links.Links, now time.Time, f store.Feed, owner int64, deadline time.Time, paymentsOn bool) store.Notice {
	name := feedName(f)
	n := store.Notice{
		Subject: "Your credits ran out: readers of " + name + " were told",
		Text: "You pay for the readers of " + name + " (" + f.URL + "), and your feedmail balance has run out.\n\n" +
			"We told its readers. They keep getting it until " + day(deadline) + "; then those who did not choose to pay " +
			"for it themselves are unsubscribed. Add credits before then and you pay for everyone again.",
	}
	if l.Base != "" && l.Tokens != nil {
		if paymentsOn {
			n.Links = append(n.Links, store.NoticeLink{Label: "Buy credits", URL: l.CreditsFor(owner, now)})
		}
		n.Links = append(n.Links, store.NoticeLink{Label: "Your account", URL: l.Account(owner, now)})
	}
	return n
}

func ownerLapseEnded(l links.Links, now time.Time, f store.Feed, userID int64) store.Notice {
	name := feedName(f)
	n := store.Notice{
		Subject: "Your subscription to " + name + " has ended",
		Text: "The publisher of " + name + " (" + f.URL + ") stopped paying for your emails from it, and you did not " +
			"choose to pay for them yourself, so your subscription has ended and nothing more is sent or charged.\n\n" +
			"You can subscribe again at any time; you then pay for it like any other feed.",
	}
	if l.Base != "" && l.Tokens != nil {
		n.Links = append(n.Links, store.NoticeLink{Label: "Your account", URL: l.Account(userID, now)})
	}
	return n
}
