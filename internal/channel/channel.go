package channel

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"time"

	"github.com/feedmail/feedmail/internal/model"
)

// Email is the name of the default channel, which the mailer's transports
// deliver; it has no package here.
const Email = model.ChannelEmail

// Channel is one way out. Implementations are stateless and safe for
// concurrent use.
type Channel interface {
	// Name is the channel's name as commands, pages and the store spell it.
	Name() string
	// Check validates a target a person gave and returns it as it is to
	// be stored: canonical, with a secret made where the channel makes its
	// own (a webhook's signing secret). Its error is for that person.
	Check(t Target) (Target, error)
	// Render returns the request that delivers d. An error is permanent:
	// the delivery cannot be made as it is.
	Render(d Delivery) (*Request, error)
	// Deliver sends r with hc (the guarded client: targets are
	// user-supplied URLs). nil means the service accepted it.
	Deliver(ctx context.Context, hc *http.Client, r *Request) error
	// Judge says what to do about a failed delivery.
	Judge(err error) Verdict
}

// Target is where a subscription's deliveries go.
type Target struct {
	// URL is the service's address for the target (a webhook URL, an
	// ntfy topic URL, a Matrix homeserver with its room).
	URL string
	// Secret is a webhook's signing secret or an access token; "" for none.
	Secret string
}

// Delivery is one thing to deliver to one target: a post, or a digest issue.
type Delivery struct {
	// ID is the idempotency id of the delivery, the same for every attempt
	// (a webhook's webhook-id, a Matrix transaction id).
	ID     string
	Target Target
	// At is when this attempt is made (a webhook's timestamp).
	At    time.Time
	Post  *Post
	Issue *Issue
}

// Feed is the feed a post is from.
type Feed struct {
	Title   string `json:"title"`
	URL     string `json:"url"`
	SiteURL string `json:"site_url,omitempty"`
}

// Post is a post as a subscription's format shows it: HTML sanitized the
// way email is, Text its plain rendering; both empty for the format
// "title".
type Post struct {
	Feed      Feed
	Title     string
	Link      string
	Author    string
	Published time.Time // zero when the feed gave no date
	Seen      time.Time // when feedmail first saw it
	HTML      string
	Text      string
	Media     model.ItemMedia
}

// Issue is one digest issue: its posts grouped by feed.
type Issue struct {
	Name    string
	Edition string
	Feeds   []IssueFeed
}

// IssueFeed is one feed of an issue, with its posts (newest first). More
// counts its posts of the issue not in Posts: an issue shows at most a
// few of each feed, and says how many more there were.
type IssueFeed struct {
	Feed  Feed
	Posts []Post
	More  int
}

// Request is one HTTP request to a channel's service.
type Request struct {
	Method string
	URL    string
	Header http.Header
	Body   []byte
	// Credential says the request carries one (an access token, or a URL
	// that is itself the secret): over plain http, Send lets it reach only
	// a private address the operator allowed (fetcher.PrivateOnly).
	Credential bool
}

// Credentialed is implemented by a channel whose requests to target t
// carry a credential anyone on the path could use (Request.Credential).
type Credentialed interface {
	Credential(t Target) bool
}

// CarriesCredential reports whether c's requests to t carry a credential.
func CarriesCredential(c Channel, t Target) bool {
	cc, ok := c.(Credentialed)
	return ok && cc.Credential(t)
}

// Action is what the outbox does with a delivery that failed.
type Action int

const (
	// Retry: try again later, with the outbox's backoff (and not before
	// Verdict.After).
	Retry Action = iota
	// Gone: the target no longer exists (404, 410): the delivery fails and
	// the subscription ends, with a notice to its owner.
	Gone
	// Refused: the target refused this delivery for good (another 4xx, a
	// target that cannot be reached by rule): the delivery fails,
	// refunded; the subscription stays.
	Refused
)

// String names a for logs and tests.
func (a Action) String() string { return [...]string{"retry", "gone", "refused"}[a] }

// Verdict is a channel's judgement of a failure.
type Verdict struct {
	Action Action
	// After is the least wait the service asked for (Retry-After), 0 when
	// it said nothing.
	After time.Duration
}

// ErrBadTarget wraps the errors of Check.
var ErrBadTarget = errors.New("bad target")

// Registry is the set of channels a process knows, by name.
type Registry struct {
	byName map[string]Channel
}

// NewRegistry returns a registry of cs (a later one of the same name wins).
func NewRegistry(cs ...Channel) *Registry {
	r := &Registry{byName: make(map[string]Channel, len(cs))}
	for _, c := range cs {
		r.byName[c.Name()] = c
	}
	return r
}

// Get returns the channel called name; ok is false for email and for
// names the registry does not know.
func (r *Registry) Get(name string) (Channel, bool) {
	if r == nil {
		return nil, false
	}
	c, ok := r.byName[name]
	return c, ok
}

// Names returns "email" and the registered names, sorted after it.
func (r *Registry) Names() []string {
	var out []string
	if r != nil {
		for n := range r.byName {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return append([]string{Email}, out...)
}
