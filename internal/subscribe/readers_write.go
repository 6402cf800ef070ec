package subscribe

import (
	"context"

	"github.com/feedmail/feedmail/internal/notices"
	"github.com/feedmail/feedmail/internal/store"
)

// batchOutcome is what writing one batch did, told once it committed.
type batchOutcome struct {
	sum      ReadersSummary
	problems []ReaderProblem
}

// writeBatch writes one batch in one transaction: the accounts (new ones
// confirmed, with their trial, when Confirmed), the feeds (new ones due for
// their first poll, titled and counted), the subscriptions, and then
// either the confirmation and trial of the people who had an account
// (Confirmed) or one email each asking them to confirm. Problems found on the way (an address
// whose mail bounces, a feed feedmail stopped polling, a subscription
// the person has) are told once the batch committed.
func (run *readersRun) writeBatch(ctx context.Context, batch []readerEntry) error {
	var out batchOutcome
	err := run.s.Store.Tx(ctx, func(tx *store.Store) error {
		out = batchOutcome{}
		return run.writeTx(ctx, tx, batch, &out)
	})
	if err != nil {
		return err
	}
	for _, p := range out.problems {
		run.problem(p)
	}
	run.mu.Lock()
	run.sum.add(out.sum)
	sum := run.sum
	run.mu.Unlock()
	if run.opt.Progress != nil {
		run.opt.Progress(sum)
	}
	return nil
}

// writeTx is writeBatch's transaction.
func (run *readersRun) writeTx(ctx context.Context, tx *store.Store, batch []readerEntry, out *batchOutcome) error {
	emails := make([]string, len(batch))
	for i, e := range batch {
		emails[i] = e.email
	}
	users, fresh, err := tx.EnsureUsers(ctx, emails, store.NewUsers{Confirmed: run.opt.Confirmed, Trial: run.s.TrialCredits})
	if err != nil {
		return err
	}
	batch = run.liveReaders(batch, users, out)
	feeds, created, err := tx.EnsureNewFeeds(ctx, run.batchFeeds(batch))
	if err != nil {
		return err
	}
	subs, metas := run.subscriptions(batch, users, feeds, out)
	if err := tx.SetFeedsMetaIfEmpty(ctx, metas); err != nil {
		return err
	}
	already, err := tx.SubscribeReaders(ctx, subs, run.confirmedBy(), fresh, created)
	if err != nil {
		return err
	}
	added := map[int64]int{}
	for _, n := range subs {
		if already[store.ReaderFeed{UserID: n.UserID, FeedID: n.FeedID}] {
			out.sum.Already++
			continue
		}
		added[n.UserID]++
		out.sum.Added++
	}
	run.alreadyProblems(batch, users, feeds, already, out)
	for _, e := range batch {
		out.sum.Readers++
		if fresh[users[e.email].ID] {
			out.sum.Created++
		}
	}
	return run.afterBatch(ctx, tx, users, added, fresh, out)
}

// liveReaders returns the entries of batch whose account takes mail; an
// account whose mail bounces is a dead address, reported and left out.
func (run *readersRun) liveReaders(batch []readerEntry, users map[string]*store.User, out *batchOutcome) []readerEntry {
	live := batch[:0]
	for _, e := range batch {
		if u := users[e.email]; u.BouncingSince != nil {
			out.problems = append(out.problems, ReaderProblem{Source: e.source, Email: e.email, Kind: ProblemDeadAddress,
				Reason: "mail to this account bounces (since " + u.BouncingSince.UTC().Format("2006-01-02") + "); this list is not imported"})
			out.sum.SkippedLists++
			continue
		}
		live = append(live, e)
	}
	return live
}

// batchFeeds returns the feeds of batch, each once, with the first title
// a list gives it and, when the import confirms, how many of the lists
// name it (the active subscriptions it gets if feedmail creates it now:
// nobody else can have it then).
func (run *readersRun) batchFeeds(batch []readerEntry) []store.NewFeed {
	at := map[string]int{}
	var out []store.NewFeed
	for _, e := range batch {
		for _, f := range e.feeds {
			k, ok := at[f.url]
			if !ok {
				k = len(out)
				at[f.url] = k
				out = append(out, store.NewFeed{URL: f.url, Title: f.title})
			}
			if run.opt.Confirmed {
				out[k].Subscribers++
			}
		}
	}
	return out
}

// subscriptions returns the subscriptions batch asks for and the titles
// the lists give the feeds (kept where a feed has none); an entry whose
// feed feedmail stopped polling is reported instead (see knownFeed).
func (run *readersRun) subscriptions(batch []readerEntry, users map[string]*store.User, feeds map[string]*store.Feed, out *batchOutcome) ([]store.ReaderSubscription, []store.FeedMeta) {
	var subs []store.ReaderSubscription
	var metas []store.FeedMeta
	for _, e := range batch {
		uid := users[e.email].ID
		for _, f := range e.feeds {
			fd := feeds[f.url]
			if _, settled, err := run.s.knownFeed(fd); settled && err != nil {
				out.problems = append(out.problems, ReaderProblem{Source: e.source, Email: e.email, URL: f.url,
					Kind: ProblemFeedStopped, Reason: err.Error()})
				out.sum.Failed++
				continue
			}
			subs = append(subs, store.ReaderSubscription{UserID: uid, FeedID: fd.ID, Folder: f.folder})
			if f.title != "" && fd.Title == "" {
				metas = append(metas, store.FeedMeta{FeedID: fd.ID, Title: f.title})
			}
		}
	}
	return subs, metas
}

// alreadyProblems reports each subscription the person had already.
func (run *readersRun) alreadyProblems(batch []readerEntry, users map[string]*store.User, feeds map[string]*store.Feed, already map[store.ReaderFeed]bool, out *batchOutcome) {
	if len(already) == 0 {
		return
	}
	for _, e := range batch {
		for _, f := range e.feeds {
			if already[store.ReaderFeed{UserID: users[e.email].ID, FeedID: feeds[f.url].ID}] {
				out.problems = append(out.problems, ReaderProblem{Source: e.source, Email: e.email, URL: f.url,
					Kind: ProblemDuplicateSub, Reason: "the person has this feed already"})
			}
		}
	}
}

// afterBatch confirms the people who had an account and got a
// subscription (Confirmed: their address vouched for, trial credits) or
// queues one email each asking them to confirm.
func (run *readersRun) afterBatch(ctx context.Context, tx *store.Store, users map[string]*store.User, added map[int64]int, fresh map[int64]bool, out *batchOutcome) error {
	if run.opt.Confirmed {
		ids := make([]int64, 0, len(added))
		for id := range added {
			if !fresh[id] { // EnsureUsers confirmed the new ones
				ids = append(ids, id)
			}
		}
		return tx.ConfirmReaders(ctx, ids, run.s.TrialCredits)
	}
	for _, u := range users {
		n := added[u.ID]
		if n == 0 {
			continue
		}
		key, notice := notices.ImportConfirm(run.s.Links, run.s.Clock.Now(), u.ID, u.Email, n)
		queued, err := tx.QueueNotice(ctx, u.ID, key, notice)
		if err != nil {
			return err
		}
		if queued {
			out.sum.Notices++
		}
	}
	return nil
}

// confirmedBy is how the import's subscriptions are confirmed.
func (run *readersRun) confirmedBy() string {
	if run.opt.Confirmed {
		return store.ConfirmedByOperator
	}
	return ""
}
