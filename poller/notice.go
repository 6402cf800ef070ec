package poller

import (
	"strconv"

	"github.com/feedmail/feedmail/internal/store"
)

// endNotice builds the notices to the subscribers of feed f, which this
// poll ends: gone (410) ends their subscriptions, blacklisting keeps them.
// Each user is told once per NoticeKey.
func (p *Poller) endNotice(f store.Feed, gone bool) *store.FeedEnd {
	feedID := strconv.FormatInt(f.ID, 10)
	end := &store.FeedEnd{}
	var key string
	if gone {
		end.EndSubscriptions = true
		end.EndedReason = "the feed answered 410 Gone"
		key = "gone:" + feedID + ":"
	} else {
		since := ""
		if f.ErrorsSince != nil {
			since = f.ErrorsSince.UTC().Format("2006-01-02")
		}
		key = "blacklisted:" + feedID + ":" + since + ":"
	}
	subject, text := endNoticeText(f, gone)
	end.NoticeKey = func(userID int64) string { return key + strconv.FormatInt(userID, 10) }
	end.Notice = func(userID int64) store.Notice {
		n := store.Notice{Subject: subject, Text: text}
		if l := p.cfg.Links; l != nil {
			now := p.clk.Now()
			n.Links = append(n.Links, store.NoticeLink{Label: "Why (feed status)", URL: l.Status(f.URL)})
			if l.Tokens != nil {
				n.Links = append(n.Links, store.NoticeLink{Label: "Your subscriptions", URL: l.Account(userID, now)})
			}
		}
		return n
	}
	return end
}

// endNoticeText is the subject and text of the notice that feed f is gone
// (410) or blacklisted.
func endNoticeText(f store.Feed, gone bool) (subject, text string) {
	name := f.Title
	if name == "" {
		name = f.URL
	}
	if gone {
		return "A feed you follow is gone: " + name,
			"The feed " + name + " (" + f.URL + ") answered \"410 Gone\": its publisher removed it for good.\n\n" +
				"Your subscription to it has ended and no credits will be used for it. " +
				"If the site has a new feed, you can subscribe to that one."
	}
	return "A feed you follow has stopped working: " + name,
		"For more than 90 days the feed " + name + " (" + f.URL + ") has answered nothing but errors " +
			"(last: " + f.LastError + "), so feedmail stopped polling it.\n\n" +
			"Your subscription is kept: if the publisher fixes the feed and pings feedmail, delivery resumes."
}
