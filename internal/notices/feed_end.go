package notices

import (
	"strconv"
	"time"

	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/store"
)

// FeedGoneKey is the dedupe key of the "feed is gone" notice of feed feedID
// to userID: once per feed and person.
func FeedGoneKey(feedID, userID int64) string {
	return "gone:" + strconv.FormatInt(feedID, 10) + ":" + strconv.FormatInt(userID, 10)
}

// FeedGone tells userID that feed f answered 410 Gone and their
// subscription ended. l may be nil (no buttons).
func FeedGone(l *links.Links, now time.Time, f store.Feed, userID int64) store.Notice {
	name := feedName(f)
	return feedEndNotice(l, now, f, userID,
		"A feed you follow is gone: "+name,
		"The feed "+name+" ("+f.URL+") answered \"410 Gone\": its publisher removed it for good.\n\n"+
			"Your subscription to it has ended and no credits will be used for it. "+
			"If the site has a new feed, you can subscribe to that one.")
}

// FeedBlacklistedKey is the dedupe key of the "feed stopped" notice of f to
// userID: once per person and error episode (the day errors began).
func FeedBlacklistedKey(f store.Feed, userID int64) string {
	since := ""
	if f.ErrorsSince != nil {
		since = f.ErrorsSince.UTC().Format("2006-01-02")
	}
	return "blacklisted:" + strconv.FormatInt(f.ID, 10) + ":" + since + ":" + strconv.FormatInt(userID, 10)
}

// FeedBlacklisted tells userID that feed f failed for 90 days and is no
// longer polled; the subscription is kept. l may be nil (no buttons).
func FeedBlacklisted(l *links.Links, now time.Time, f store.Feed, userID int64) store.Notice {
	name := feedName(f)
	return feedEndNotice(l, now, f, userID,
		"A feed you follow has stopped working: "+name,
		"For more than 90 days the feed "+name+" ("+f.URL+") has answered nothing but errors "+
			"(last: "+f.LastError+"), so feedmail stopped polling it.\n\n"+
			"Your subscription is kept: if the publisher fixes the feed and pings feedmail, delivery resumes.")
}

func feedName(f store.Feed) string {
	if f.Title == "" {
		return f.URL
	}
	return f.Title
}

// feedEndNotice adds the status and account buttons when links are known
// (the account button only with a token signer).
func feedEndNotice(l *links.Links, now time.Time, f store.Feed, userID int64, subject, text string) store.Notice {
	n := store.Notice{Subject: subject, Text: text}
	if l != nil {
		n.Links = append(n.Links, store.NoticeLink{Label: "Why (feed status)", URL: l.Status(f.URL)})
		if l.Tokens != nil {
			n.Links = append(n.Links, store.NoticeLink{Label: "Your subscriptions", URL: l.Account(userID, now)})
		}
	}
	return n
}

// CreditsOut tells userID that their balance ran out and new posts wait up
// to holdFor (whole days) for credits. With paymentsOn the first button
// buys credits for their account (the credits page with their account
// token: l.Tokens needed); without it the text says to ask the operator,
// and there is no button to a shop that is closed. Buttons need l.Base.
// The mailer queues it under billing.KeyCreditsNotice, once per shortage.
func CreditsOut(l links.Links, now time.Time, holdFor time.Duration, userID int64, paymentsOn bool) store.Notice {
	add := "As soon as you add credits, everything that waited is sent."
	if !paymentsOn {
		add = "This feedmail does not sell credits: ask the person who runs it to add some. " +
			"As soon as they do, everything that waited is sent."
	}
	n := store.Notice{
		Subject: "Your feedmail credits have run out",
		Text: "Your feedmail balance has run out, so new posts from your feeds are waiting instead of being emailed.\n\n" +
			"They wait for up to " + strconv.Itoa(int(holdFor/(24*time.Hour))) + " days. " + add + "\n\n" +
			"This is the only reminder you will get for this shortage.",
	}
	return withCreditButtons(n, l, now, userID, paymentsOn)
}
