package web

import (
	"errors"
	"html/template"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/feedmail/feedmail/digest"
	"github.com/feedmail/feedmail/internal/forecast"
	"github.com/feedmail/feedmail/internal/newitems"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/subscribe"
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
	Candidates []candidate
	Presets    []digest.Preset
	Zones      []string
	// SignInEmail and SignInSent belong to the sign-in form below the signup.
	SignInEmail string
	// Fresh marks a form nobody has sent yet: only then may the browser's
	// script pick the time zone (afterwards it is the person's choice).
	Fresh bool
	// Newest: send the feed's newest post on confirmation (on by default).
	Newest bool
	// FeedName names the feed of a publisher's "subscribe by email" link
	// (/subscribe?url=…): its title when feedmail knows the feed, else the
	// site's host. Never fetched for a GET.
	FeedName string
	// Forecast is the cost forecast of a feed feedmail knows (from its
	// stored items), nil otherwise.
	Forecast *forecast.Forecast
	// Format is how each email shows a post (store.Format*); FormatHint
	// says why "article" is suggested for a known feed that sends only
	// the start of its posts.
	Format, FormatHint string
	// OwnerPaid: the feed's publisher pays for its readers.
	OwnerPaid bool
	// PreviewSrc is the preview of the email the form's choices would
	// send ("" until asked for).
	PreviewSrc template.URL
	// Proof is the form's proof-of-work challenge (nil: none asked).
	Proof *proofFields
}

// candidate is a feed a site advertises, with the cost forecast when
// feedmail knows it (no candidate is fetched to forecast it).
type candidate struct {
	newitems.Alternate
	Forecast *forecast.Forecast
}

func (s *Server) newSignup(r *http.Request) *signupData {
	return &signupData{Delivery: deliveryInstant, Zone: zoneFromAcceptLanguage(r.Header.Get("Accept-Language")),
		Errors: map[string]string{}, Presets: digest.Presets(), Newest: true, Format: store.FormatFull}
}

func (s *Server) showSignup(w http.ResponseWriter, r *http.Request, status int, d *signupData) {
	d.Zones = zoneOptions(d.Zone)
	title := "Get feeds by email"
	if len(d.Candidates) > 0 {
		title = "Pick a feed"
	}
	d.Proof = s.issueProof()
	s.render(w, r, status, "signup", title, d)
}

// signupPage is GET /: the empty form.
func (s *Server) signupPage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-cache")
	d := s.newSignup(r)
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

// createSubscription is POST /subscriptions: check the form's proof of
// work, the address and the feed (fetching it), then queue a confirmation
// email. Nothing is active until the person confirms.
func (s *Server) createSubscription(w http.ResponseWriter, r *http.Request) {
	if !s.parseForm(w, r) {
		return
	}
	d := s.signupForm(r)
	if r.PostForm.Get("preview") != "" {
		s.signupPreview(w, r, d)
		return
	}
	if r.PostForm.Get("website") != "" {
		// The honeypot: people never see it, form-filling robots do.
		s.Log.Debug("signup honeypot filled", "ip", clientIP(r))
		s.render(w, r, http.StatusOK, "inbox", "Check your inbox", inboxData{Email: d.Email})
		return
	}
	if msg, err := s.checkProof(r); err != nil {
		s.serverError(w, r, err)
		return
	} else if msg != "" {
		d.Errors[proofField] = msg
		s.showSignup(w, r, http.StatusUnprocessableEntity, d)
		return
	}
	in := checkSignup(d)
	if s.limited(w, r, key("signup-ip", clientIP(r), s.lim.SignupPerIP)) {
		return
	}
	// The per-mailbox and per-domain limits protect inboxes: they are
	// checked now and taken only when an email is queued (finishSignup),
	// so attempts that fail (no feed, a typo) cost the person nothing.
	if in.emailOK {
		res, err := s.limiter.Check(r.Context(), s.mailKeys(in.email)...)
		if err != nil {
			s.serverError(w, r, err)
			return
		}
		if !res.OK {
			s.Log.Info("rate limited", "key", res.Key, "wait", res.Wait)
			s.tooMany(w, r, res.Wait)
			return
		}
	}
	// Check the feed even when the address is wrong, so both errors show
	// at once.
	var found subscribe.Found
	if in.urlOK {
		var err error
		found, err = s.subs.FindTyped(r.Context(), d.URL, s.fetchBudget(r, 0))
		var fe subscribe.FieldError
		var be *subscribe.BudgetError
		switch {
		case errors.As(err, &fe):
			d.Errors["url"] = fe.Msg
		case errors.As(err, &be):
			d.Errors["url"] = be.Error()
		case err != nil:
			s.serverError(w, r, err)
			return
		}
	}
	s.finishSignup(w, r, d, in, found)
}

// finishSignup shows the form again (errors, or several feeds to pick
// from) or subscribes and shows "check your inbox".
func (s *Server) finishSignup(w http.ResponseWriter, r *http.Request, d *signupData, in signupInput, found subscribe.Found) {
	if len(d.Errors) > 0 {
		if found.URL != "" {
			// The feed was found (only the address was wrong): its forecast
			// shows while the person corrects the form.
			fc := found.Forecast
			d.Forecast = &fc
		}
		s.showSignup(w, r, http.StatusUnprocessableEntity, d)
		return
	}
	if len(found.Candidates) > 0 {
		d.URL = found.Candidates[0].URL
		cands, err := s.candidatesOf(r.Context(), found.Candidates)
		if err != nil {
			s.serverError(w, r, err)
			return
		}
		d.Candidates = cands
		s.showSignup(w, r, http.StatusOK, d)
		return
	}
	res, err := s.subs.Subscribe(r.Context(), subscribe.Request{Email: in.email, Feed: found, Preset: in.preset,
		Zone: d.Zone, KeepActive: true, SendNewest: d.Newest, Controls: store.Controls{Format: &d.Format}})
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	if res.ConfirmationSent || res.Already {
		if _, err := s.limiter.Take(r.Context(), s.mailKeys(in.email)...); err != nil {
			s.Log.Error("signup: count the confirmation email", "err", err)
		}
	}
	recent := !res.ConfirmationSent && !res.Already && res.Sub != nil && res.Sub.State == store.SubPending
	key := deliveryInstant
	if in.preset != nil {
		key = in.preset.Key
	}
	fc := found.Forecast
	cut, err := s.cutShortUnlessArticle(r.Context(), res.Feed, d.Format)
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "inbox", "Check your inbox", inboxData{Email: in.email, FeedTitle: res.Title, Recent: recent,
		Forecast: &fc, DeliveryKey: key, CutShort: cut})
}

// signupPreview shows the form again as it was sent, with the preview of
// the email its choices would send: nothing is checked, stored or sent
// here (the preview page does the work, within its limits).
func (s *Server) signupPreview(w http.ResponseWriter, r *http.Request, d *signupData) {
	_, msg := subscribe.NormalizeFeedURL(d.URL)
	if strings.TrimSpace(d.URL) == "" {
		msg = "type a feed or site address to see the email it would send"
	}
	if msg != "" {
		d.Errors["url"] = msg
		s.showSignup(w, r, http.StatusUnprocessableEntity, d)
		return
	}
	d.PreviewSrc = previewSrc(d.URL, d.Format, d.Delivery, d.Zone)
	s.showSignup(w, r, http.StatusOK, d)
}

// signupForm reads the posted signup form, clipped, over the defaults.
func (s *Server) signupForm(r *http.Request) *signupData {
	d := s.newSignup(r)
	d.Email = clip(strings.TrimSpace(r.PostForm.Get("email")), 320)
	d.URL = clip(strings.TrimSpace(r.PostForm.Get("url")), 2048)
	d.Newest = r.PostForm.Get("newest") != ""
	if v := r.PostForm.Get("delivery"); v != "" {
		d.Delivery = clip(v, 40)
	}
	if v := strings.TrimSpace(r.PostForm.Get("zone")); v != "" {
		d.Zone = clip(v, 64)
	}
	if v := r.PostForm.Get("format"); v != "" {
		d.Format = clip(v, 40)
	}
	return d
}

// signupInput is the signup form once checked.
type signupInput struct {
	email          string
	emailOK, urlOK bool
	preset         *digest.Preset // nil: instant
}

// checkSignup checks every field of d, noting each problem in d.Errors (an
// unknown zone falls back to UTC).
func checkSignup(d *signupData) signupInput {
	var in signupInput
	email, emailErr := subscribe.CheckEmail(d.Email)
	if emailErr != "" {
		d.Errors["email"] = emailErr
	}
	_, urlErr := subscribe.NormalizeFeedURL(d.URL)
	if urlErr != "" {
		d.Errors["url"] = urlErr
	}
	in.email, in.emailOK, in.urlOK = email, emailErr == "", urlErr == ""
	if d.Delivery != deliveryInstant {
		for _, p := range d.Presets {
			if p.Key == d.Delivery {
				in.preset = &p
				break
			}
		}
		if in.preset == nil {
			d.Errors["delivery"] = "pick how often you want email"
		}
	}
	if c, err := store.CheckControls(store.Controls{Format: &d.Format}); err != nil {
		d.Errors["format"] = "pick what each email shows from the list"
		d.Format = store.FormatFull
	} else {
		d.Format = *c.Format
	}
	if !validZone(d.Zone) {
		d.Errors["zone"] = "pick a time zone from the list"
		d.Zone = "UTC"
	}
	return in
}

// inboxData is the "check your inbox" page.
type inboxData struct {
	Email, FeedTitle string
	// Recent: the same signup a moment ago already queued the email, and
	// none was sent now (the page must not claim one was).
	Recent bool
	// Forecast and DeliveryKey say what the chosen delivery would cost,
	// while confirming is still to come (nil: nothing to say).
	Forecast    *forecast.Forecast
	DeliveryKey string
	// CutShort says why the feed's posts look cut short when the person
	// did not pick the article format ("" otherwise).
	CutShort string
}

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
