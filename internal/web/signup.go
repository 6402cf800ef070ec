package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/mail"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/feedmail/feedmail/digest"
	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/newitems"
	"github.com/feedmail/feedmail/internal/store"
)

// signupFetchTimeout bounds the fetch of a feed while a person waits for the
// signup page (shorter than the poller's 30 s).
const signupFetchTimeout = 20 * time.Second

// maxFormBytes caps urlencoded form bodies.
const maxFormBytes = 32 << 10

// Delivery choices on the signup form: "instant", or a digest preset key.
const deliveryInstant = "instant"

// signupData is the signup form: what was typed, and an error per field.
type signupData struct {
	Email, URL, Delivery, Zone string
	Errors                     map[string]string
	// Candidates are the feeds a site advertises when there are several.
	Candidates []newitems.Alternate
	Presets    []digest.Preset
	Zones      []string
	// SignInEmail and SignInSent belong to the sign-in form below the signup.
	SignInEmail string
	// Fresh marks a form nobody has sent yet: only then may the browser's
	// script pick the time zone (afterwards it is the person's choice).
	Fresh bool
}

func (s *Server) newSignup(r *http.Request) *signupData {
	return &signupData{Delivery: deliveryInstant, Zone: zoneFromAcceptLanguage(r.Header.Get("Accept-Language")),
		Errors: map[string]string{}, Presets: digest.Presets()}
}

func (s *Server) showSignup(w http.ResponseWriter, r *http.Request, status int, d *signupData) {
	d.Zones = zoneOptions(d.Zone)
	title := "Get feeds by email"
	if len(d.Candidates) > 0 {
		title = "Pick a feed"
	}
	s.render(w, r, status, "signup", title, d)
}

// signupPage is GET /: the empty form.
func (s *Server) signupPage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-cache")
	d := s.newSignup(r)
	d.Fresh = true
	s.showSignup(w, r, http.StatusOK, d)
}

// subscribePage is GET /subscribe?url=…[&email=…]: the form filled in, for
// publishers to link to (and for the form in the README to submit to).
func (s *Server) subscribePage(w http.ResponseWriter, r *http.Request) {
	d := s.newSignup(r)
	q := r.URL.Query()
	d.URL = clip(q.Get("url"), 2048)
	d.Email = clip(q.Get("email"), 254)
	d.Fresh = true
	s.showSignup(w, r, http.StatusOK, d)
}

// parseForm reads a urlencoded form of at most maxFormBytes. It answers the
// request itself (413 or 400) and returns false when the form is unusable.
func (s *Server) parseForm(w http.ResponseWriter, r *http.Request) bool {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			s.renderMessage(w, r, http.StatusRequestEntityTooLarge, "That was too much",
				"The form sent more than feedmail accepts. Please shorten what you typed.")
			return false
		}
		s.renderMessage(w, r, http.StatusBadRequest, "The form could not be read",
			"Please go back and send the form again.")
		return false
	}
	return true
}

// createSubscription is POST /subscriptions: check the address and the
// feed (fetching it), then queue a confirmation email. Nothing is active
// until the person confirms.
func (s *Server) createSubscription(w http.ResponseWriter, r *http.Request) {
	if !s.parseForm(w, r) {
		return
	}
	d := s.newSignup(r)
	d.Email = clip(strings.TrimSpace(r.PostForm.Get("email")), 320)
	d.URL = clip(strings.TrimSpace(r.PostForm.Get("url")), 2048)
	if v := r.PostForm.Get("delivery"); v != "" {
		d.Delivery = clip(v, 40)
	}
	if v := strings.TrimSpace(r.PostForm.Get("zone")); v != "" {
		d.Zone = clip(v, 64)
	}
	if r.PostForm.Get("website") != "" {
		// The honeypot: people never see it, form-filling robots do.
		s.Log.Debug("signup honeypot filled", "ip", clientIP(r))
		s.render(w, r, http.StatusOK, "inbox", "Check your inbox", inboxData{Email: d.Email})
		return
	}

	email, emailErr := checkEmail(d.Email)
	if emailErr != "" {
		d.Errors["email"] = emailErr
	}
	feedURL, urlErr := normalizeFeedURL(d.URL)
	if urlErr != "" {
		d.Errors["url"] = urlErr
	}
	var preset *digest.Preset
	if d.Delivery != deliveryInstant {
		for _, p := range d.Presets {
			if p.Key == d.Delivery {
				preset = &p
				break
			}
		}
		if preset == nil {
			d.Errors["delivery"] = "pick how often you want email"
		}
	}
	if !validZone(d.Zone) {
		d.Errors["zone"] = "pick a time zone from the list"
		d.Zone = "UTC"
	}

	now := s.Clock.Now()
	if ok, wait := s.rl.signupIP.allow(clientIP(r), now); !ok {
		s.tooMany(w, r, wait)
		return
	}
	if emailErr == "" {
		if ok, wait := s.rl.signupAddr.allow(addressKey(email), now); !ok {
			s.tooMany(w, r, wait)
			return
		}
	}
	// Check the feed even when the address is wrong, so both errors show
	// at once.
	var found foundFeed
	if urlErr == "" {
		var err error
		found, err = s.findFeed(r.Context(), feedURL)
		if err != nil {
			var fe fieldError
			if !errors.As(err, &fe) {
				s.serverError(w, r, err)
				return
			}
			d.Errors["url"] = fe.msg
		}
	}
	if len(d.Errors) > 0 {
		s.showSignup(w, r, http.StatusUnprocessableEntity, d)
		return
	}
	if len(found.candidates) > 0 {
		d.URL = found.candidates[0].URL
		d.Candidates = found.candidates
		s.showSignup(w, r, http.StatusOK, d)
		return
	}

	title, err := s.subscribePending(r.Context(), email, found, preset, d.Zone)
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "inbox", "Check your inbox", inboxData{Email: email, FeedTitle: title})
}

// inboxData is the "check your inbox" page.
type inboxData struct {
	Email, FeedTitle string
}

// subscribePending records the person, the feed and a pending subscription
// and queues the confirmation email. An existing active subscription is not
// touched (an unauthenticated form must not change it); the person gets an
// email with a sign-in link instead. It returns the feed's title.
func (s *Server) subscribePending(ctx context.Context, email string, f foundFeed, preset *digest.Preset, zone string) (string, error) {
	now := s.Clock.Now()
	u, created, err := s.Store.EnsureUser(ctx, email)
	if err != nil {
		return "", err
	}
	if created || u.ConfirmedAt == nil {
		if err := s.Store.SetUserTimezone(ctx, u.ID, zone); err != nil {
			return "", fmt.Errorf("set time zone: %w", err)
		}
	}
	feed, _, err := s.Store.EnsureFeed(ctx, f.url)
	if err != nil {
		return "", err
	}
	if err := s.Store.SetFeedMetaIfEmpty(ctx, feed.ID, f.title, f.siteURL); err != nil {
		return "", err
	}
	title := feed.Title
	if title == "" {
		title = f.title
	}
	if title == "" {
		title = feed.URL
	}
	subs, err := s.Store.SubscriptionsOfUser(ctx, u.ID)
	if err != nil {
		return "", fmt.Errorf("subscriptions of user %d: %w", u.ID, err)
	}
	for _, sub := range subs {
		if sub.FeedID == feed.ID && sub.State == store.SubActive {
			_, err := s.Store.QueueNotice(ctx, u.ID, fmt.Sprintf("already:%d:%d", sub.ID, now.Unix()/60), store.Notice{
				Subject: "You already get " + title + " by email",
				Text: "Someone (hopefully you) asked feedmail to send new posts from " + title + " to " + u.Email +
					". You already get them, so nothing changed.\n\nTo change how you get them, open your account.",
				Links: []store.NoticeLink{{Label: "Open my account", URL: s.links.SignIn(u.ID, now)}},
			})
			return title, err
		}
	}

	var digestID *int64
	delivery := "every new post in its own email, as soon as we see it"
	if preset != nil {
		dg, err := s.presetDigest(ctx, u, preset, zone)
		if err != nil {
			return "", err
		}
		digestID = &dg.ID
		delivery = "in your digest “" + dg.Name + "” (" + preset.Label + ")"
	}
	sub, err := s.Store.Subscribe(ctx, u.ID, feed.ID, digestID, false)
	if err != nil {
		return "", err
	}
	_, err = s.Store.QueueNotice(ctx, u.ID, fmt.Sprintf("confirm:%d:%d", sub.ID, now.Unix()/60), store.Notice{
		Subject: "Confirm: " + title + " by email",
		Text: "Someone (hopefully you) asked feedmail to send new posts from " + title + " (" + feed.URL + ") to " +
			u.Email + ", " + delivery + ".\n\nPress the button to confirm. If this was not you, ignore this email: " +
			"nothing will be sent.",
		Links: []store.NoticeLink{{Label: "Confirm subscription", URL: s.links.Confirm(sub.ID, now)}},
	})
	return title, err
}

// presetDigest returns the person's digest for a preset, named after it,
// creating it in zone when they have none. An existing one is used as it is.
func (s *Server) presetDigest(ctx context.Context, u *store.User, p *digest.Preset, zone string) (*store.Digest, error) {
	name := presetName(p)
	dg, err := s.Store.DigestByName(ctx, u.ID, name)
	if err == nil {
		return dg, nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	sched, err := digest.ParseSchedule(p.Spec, zone)
	if err != nil {
		return nil, fmt.Errorf("preset %s: %w", p.Key, err)
	}
	return s.Store.SetDigest(ctx, u.ID, name, sched)
}

// presetName is the digest name a preset creates: "Daily", "Weekly", ….
func presetName(p *digest.Preset) string {
	switch p.Key {
	case "daily":
		return "Daily"
	case "weekly":
		return "Weekly"
	}
	l := p.Label
	if l == "" {
		l = p.Key
	}
	return strings.ToUpper(l[:1]) + l[1:]
}

// checkEmail returns the address to store, or the error to show.
func checkEmail(raw string) (string, string) {
	if raw == "" {
		return "", "enter your email address"
	}
	a, err := mail.ParseAddress(raw)
	if err != nil || a.Name != "" || a.Address != raw || len(raw) > 254 {
		return "", "not a valid email address"
	}
	at := strings.LastIndexByte(raw, '@')
	domain := raw[at+1:]
	if at < 1 || !strings.Contains(domain, ".") || strings.HasPrefix(domain, ".") || strings.HasSuffix(domain, ".") ||
		strings.ContainsAny(raw, " \t\r\n") {
		return "", "not a valid email address"
	}
	return store.NormalizeEmail(raw), ""
}

// normalizeFeedURL accepts "example.com/blog" as https://example.com/blog and
// returns the error to show for anything that is not a web address.
func normalizeFeedURL(raw string) (string, string) {
	if raw == "" {
		return "", "enter the address of a feed or a site"
	}
	s := raw
	low := strings.ToLower(s)
	switch {
	case strings.HasPrefix(low, "feed://"):
		s = "http://" + s[len("feed://"):]
	case strings.HasPrefix(low, "feed:"):
		s = s[len("feed:"):]
	case !strings.Contains(s, "://"):
		s = "https://" + s
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		strings.ContainsAny(s, " \t\r\n") {
		return "", "that is not a web address (it should look like https://example.com/feed)"
	}
	u.Fragment = ""
	return u.String(), ""
}

// fieldError is a problem with what the person typed, shown next to the field.
type fieldError struct{ msg string }

func (e fieldError) Error() string { return e.msg }

// foundFeed is the outcome of looking at an address: a feed, or the feeds a
// page advertises when there are several to pick from.
type foundFeed struct {
	url, title, siteURL string
	candidates          []newitems.Alternate
}

// findFeed fetches raw; a feed is returned as is; an HTML page is searched
// for <link rel="alternate"> feeds: one is fetched and checked, several are
// returned as candidates. Problems are fieldErrors in plain words.
//
// A feed feedmail already polls successfully is not fetched again: one
// fetch per feed URL however many people sign up for it (a publisher's
// signup form must not turn into a stream of requests to their server).
// Feeds that are gone or stopped are refused with the reason.
func (s *Server) findFeed(ctx context.Context, raw string) (foundFeed, error) {
	f, err := s.Store.FeedByURL(ctx, raw)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return foundFeed{}, err
	case f.State == store.FeedGone:
		return foundFeed{}, fieldError{"that feed is gone: its server said it was removed (410 Gone)"}
	case f.State == store.FeedBlacklisted:
		return foundFeed{}, fieldError{"feedmail stopped polling that feed after 90 days of errors; its publisher can ping feedmail to restart it"}
	case f.LastSuccessAt != nil && s.Clock.Now().Sub(*f.LastSuccessAt) < knownFeedFresh:
		return foundFeed{url: f.URL, title: f.Title, siteURL: f.SiteURL}, nil
	}
	return s.findFeedDepth(ctx, raw, 0)
}

// knownFeedFresh is how recent a feed's last successful poll must be for
// signup to trust it without fetching it.
const knownFeedFresh = 7 * 24 * time.Hour

func (s *Server) findFeedDepth(ctx context.Context, raw string, depth int) (foundFeed, error) {
	resp, err := s.fetch.Fetch(ctx, fetcher.Request{URL: raw})
	if err != nil {
		return foundFeed{}, fieldError{fetchProblem(err)}
	}
	if resp.Status < 200 || resp.Status > 299 {
		return foundFeed{}, fieldError{"that address answered " + statusText(resp.Status) + ", not a feed"}
	}
	feedURL := raw
	if resp.PermanentURL != "" {
		feedURL = resp.PermanentURL
	}
	feed, perr := newitems.Parse(resp.Body, resp.ContentType, resp.FinalURL)
	if perr == nil {
		return foundFeed{url: feedURL, title: feed.Title, siteURL: feed.SiteURL}, nil
	}
	if errors.Is(perr, newitems.ErrInvalidFeed) {
		return foundFeed{}, fieldError{"that feed is broken and could not be read"}
	}
	if depth > 0 {
		return foundFeed{}, fieldError{"that page points to a feed that is not a feed"}
	}
	alts := newitems.Discover(resp.Body, resp.FinalURL)
	switch len(alts) {
	case 0:
		return foundFeed{}, fieldError{"that page has no feed"}
	case 1:
		return s.findFeedDepth(ctx, alts[0].URL, depth+1)
	}
	return foundFeed{candidates: alts}, nil
}

// fetchProblem says in plain words why a fetch failed.
func fetchProblem(err error) string { return fetcher.Describe(err).Plain }

// clip cuts s to at most n bytes, on a rune boundary, so that a huge field
// is never echoed back whole.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// parseFeed parses a fetched document as a feed; the error is a fieldError
// in plain words.
func parseFeed(body []byte, contentType, url string) (*newitems.Feed, error) {
	f, err := newitems.Parse(body, contentType, url)
	switch {
	case err == nil:
		return f, nil
	case errors.Is(err, newitems.ErrInvalidFeed):
		return nil, fieldError{"the feed is broken and could not be read"}
	}
	return nil, fieldError{"the address is not a feed"}
}
