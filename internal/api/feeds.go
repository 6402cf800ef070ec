package api

import (
	"net/http"
	"time"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/poller"
)

// feedPolls is how many recent polls a feed's status lists.
const feedPolls = 20

// feedStatusJSON is why a feed is polled when it is: what the public
// status page says, as data. Like the page it says nothing of other
// subscribers.
type feedStatusJSON struct {
	ID                int64      `json:"id"`
	URL               string     `json:"url"`
	Title             string     `json:"title"`
	SiteURL           string     `json:"site_url"`
	State             string     `json:"state"`
	NextPollAt        *time.Time `json:"next_poll_at"`
	Reason            string     `json:"reason"`
	LastPolledAt      *time.Time `json:"last_polled_at"`
	LastStatus        int        `json:"last_status"`
	LastError         string     `json:"last_error"`
	LastSuccessAt     *time.Time `json:"last_success_at"`
	ConsecutiveErrors int        `json:"consecutive_errors"`
	LastNewItemAt     *time.Time `json:"last_new_item_at"`
	WebSubState       string     `json:"websub_state"`
	// Health is poller.Health (healthy, failing, ailing, frozen, moved, …)
	// and Recovery what rediscovery last concluded ("" before it looked).
	Health      string         `json:"health"`
	Recovery    string         `json:"recovery"`
	RecentPolls []feedPollJSON `json:"recent_polls"`
}

// feedPollJSON is one poll, with the identical ones folded into it.
type feedPollJSON struct {
	PolledAt    time.Time `json:"polled_at"`
	Status      int       `json:"status"`
	Outcome     string    `json:"outcome"`
	Conditional bool      `json:"conditional"`
	NewItems    int       `json:"new_items"`
	ElapsedMS   int       `json:"elapsed_ms"`
	Reason      string    `json:"reason"`
	Repeats     int64     `json:"repeats"`
}

// feedStatus is GET /api/v1/feeds/{id}: the status of a feed the account
// follows (any other id is 404, so ids tell nothing of other feeds).
func (s *Server) feedStatus(w http.ResponseWriter, r *http.Request, u *store.User) {
	id, ok := pathID(w, r, "feed")
	if !ok {
		return
	}
	f, err := s.Store.AccountFeed(r.Context(), u.ID, id)
	if isNotFound(err) {
		writeProblem(w, notFound("followed feed", id))
		return
	}
	if err != nil {
		s.fail(w, r, "", err)
		return
	}
	polls, err := s.Store.RecentPolls(r.Context(), f.ID, feedPolls)
	if err != nil {
		s.fail(w, r, "", err)
		return
	}
	out := feedStatusJSON{ID: f.ID, URL: f.URL, Title: f.Title, SiteURL: f.SiteURL, State: f.State, Reason: f.PollReason,
		LastPolledAt: utcOrNil(f.LastPolledAt), LastStatus: f.LastStatus, LastError: f.LastError,
		LastSuccessAt: utcOrNil(f.LastSuccessAt), ConsecutiveErrors: f.ConsecutiveErrors,
		LastNewItemAt: utcOrNil(f.LastNewItemAt), WebSubState: f.WebSubState, RecentPolls: []feedPollJSON{},
		Health: poller.Health(f, s.Clock.Now()), Recovery: f.RecoveryState}
	if f.State == store.FeedActive && f.SubscriberCount > 0 {
		out.NextPollAt = utcOrNil(&f.NextPollAt)
	}
	repeats := store.Repeats(f, polls)
	for i, p := range polls {
		out.RecentPolls = append(out.RecentPolls, feedPollJSON{PolledAt: p.PolledAt.UTC(), Status: p.Status,
			Outcome: p.Outcome, Conditional: p.Conditional, NewItems: p.NewItems, ElapsedMS: p.ElapsedMS,
			Reason: p.Reason, Repeats: repeats[i]})
	}
	writeJSON(w, http.StatusOK, out)
}
