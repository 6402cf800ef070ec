package poller

import (
	"github.com/feedmail/feedmail/internal/notices"
	"github.com/feedmail/feedmail/internal/store"
)

// endNotice builds the notices to the subscribers of feed f, which this
// poll ends: gone (410) ends their subscriptions, blacklisting keeps them.
// The words are package notices'; each user is told once per NoticeKey.
func (p *Poller) endNotice(f store.Feed, gone bool) *store.FeedEnd {
	end := &store.FeedEnd{}
	if gone {
		end.EndSubscriptions = true
		end.EndedReason = "the feed answered 410 Gone"
		end.NoticeKey = func(userID int64) string { return notices.FeedGoneKey(f.ID, userID) }
		end.Notice = func(userID int64) store.Notice { return notices.FeedGone(p.cfg.Links, p.clk.Now(), f, userID) }
		return end
	}
	end.NoticeKey = func(userID int64) string { return notices.FeedBlacklistedKey(f, userID) }
	end.Notice = func(userID int64) store.Notice { return notices.FeedBlacklisted(p.cfg.Links, p.clk.Now(), f, userID) }
	return end
}
