// Package links declares feedmail's HTTP routes (Routes, the Path
// constants) and builds the URLs it puts in emails and pages from them.
// Every link that acts for a person carries an HMAC-signed token (package
// token), never a raw id. It must not serve requests or import web.
package links

import (
	"net/url"
	"strings"
	"time"

	"github.com/feedmail/feedmail/internal/token"
	"github.com/feedmail/feedmail/internal/websub"
)

// How long each kind of link works. Account links (AccountTTL, SignInTTL)
// open everything a person has, so they are short-lived and carry their
// issue time (token.SignIssued): "sign out everywhere" ends every one
// issued before it, and making an API token asks for one issued within
// FreshSignIn. An email read after its account link expired offers a fresh
// link by email; unsubscribing never needs one.
const (
	ConfirmTTL = 7 * 24 * time.Hour // confirmation emails
	// AccountTTL: the "manage" link in every email. Two weeks cover a weekly
	// digest read a week late.
	AccountTTL = 14 * 24 * time.Hour
	SignInTTL  = time.Hour // "email me a sign-in link": asked for now, used now
	// FreshSignIn is how recent an account link must be to make an API
	// token, which outlives the link.
	FreshSignIn = 15 * time.Minute
	// legacyAccountTTL is the lifetime of account links made before they
	// carried their issue time: such a link counts as issued this long
	// before its expiry, the earliest it can have been.
	legacyAccountTTL = 60 * 24 * time.Hour
	// Unsubscribe links never expire: RFC 8058 one-click must work from old mail.
)

// Links makes absolute URLs under Base.
type Links struct {
	Base   string // FEEDMAIL_BASE_URL, no trailing slash
	Tokens *token.Signer
	Domain string // mail domain (FEEDMAIL_FROM's), for addresses that take mail in
	Bounce string // FEEDMAIL_BOUNCE_ADDRESS, or "" (see returns.go)
}

// New returns a Links for base, signer and the sender address's domain.
func New(base string, t *token.Signer, from string) Links {
	d := from
	if i := strings.LastIndexByte(from, '@'); i >= 0 {
		d = from[i+1:]
	}
	return Links{Base: strings.TrimRight(base, "/"), Tokens: t, Domain: d}
}

// Confirm is the page that confirms subscription subID (GET shows, POST confirms).
func (l Links) Confirm(subID int64, now time.Time) string {
	return l.Base + Fill(PathConfirm, l.Tokens.Sign(token.Confirm, subID, now.Add(ConfirmTTL)))
}

// Unsubscribe ends subscription subID (GET shows, POST is RFC 8058 one-click).
func (l Links) Unsubscribe(subID int64) string {
	return l.Base + Fill(PathUnsubscribe, l.Tokens.Sign(token.Unsubscribe, subID, time.Time{}))
}

// DigestUnsubscribe ends every subscription delivered into digest digestID.
func (l Links) DigestUnsubscribe(digestID int64) string {
	return l.Base + Fill(PathUnsubscribe, l.Tokens.Sign(token.DigestUnsubscribe, digestID, time.Time{}))
}

// Account is the magic link to a person's account page.
func (l Links) Account(userID int64, now time.Time) string {
	return l.Base + Fill(PathAccount, l.Tokens.SignIssued(token.Account, userID, now, now.Add(AccountTTL)))
}

// SignIn is a short-lived account link sent on request.
func (l Links) SignIn(userID int64, now time.Time) string {
	return l.Base + Fill(PathAccount, l.Tokens.SignIssued(token.Account, userID, now, now.Add(SignInTTL)))
}

// Status is the public status page of a feed.
func (l Links) Status(feedURL string) string {
	return l.Base + PathFeedStatus + "?url=" + url.QueryEscape(feedURL)
}

// Credits is the page to buy credits.
func (l Links) Credits() string { return l.Base + PathCredits }

// CreditsFor is the credits page buying for userID's account (an account
// token, valid AccountTTL from now).
func (l Links) CreditsFor(userID int64, now time.Time) string {
	return l.Base + PathCredits + "?token=" + l.Tokens.SignIssued(token.Account, userID, now, now.Add(AccountTTL))
}

// WebSubCallback is the callback URL of feed feedID's WebSub subscription
// with secret (its hub.secret): the signed feed id and the subscription's
// tag (websub.CallbackTag), so the URL can be neither guessed from the
// feed id nor used once that subscription is gone.
func (l Links) WebSubCallback(feedID int64, secret string) string {
	return l.Base + Fill(PathWebSub, l.Tokens.Sign(token.WebSub, feedID, time.Time{})+websub.CallbackSep+websub.CallbackTag(secret))
}

// Follow is the page where a reader accepts the offer of a feed's probable
// new address (GET shows, POST follows): reader move id. It never expires:
// the offer stands until the reader answers it.
func (l Links) Follow(readerMoveID int64) string {
	return l.Base + Fill(PathMove, l.Tokens.Sign(token.Follow, readerMoveID, time.Time{}))
}

// UndoMove is the page where a reader moved to a feed's new address goes
// back to the old one (GET shows, POST moves back): reader move id.
func (l Links) UndoMove(readerMoveID int64) string {
	return l.Base + Fill(PathMove, l.Tokens.Sign(token.UndoMove, readerMoveID, time.Time{}))
}
