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
)

// How long each kind of link works.
const (
	ConfirmTTL = 7 * 24 * time.Hour  // confirmation emails
	AccountTTL = 60 * 24 * time.Hour // "manage" links in every email
	SignInTTL  = 24 * time.Hour      // "email me a sign-in link"
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
	return l.Base + Fill(PathAccount, l.Tokens.Sign(token.Account, userID, now.Add(AccountTTL)))
}

// SignIn is a short-lived account link sent on request.
func (l Links) SignIn(userID int64, now time.Time) string {
	return l.Base + Fill(PathAccount, l.Tokens.Sign(token.Account, userID, now.Add(SignInTTL)))
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
	return l.Base + PathCredits + "?token=" + l.Tokens.Sign(token.Account, userID, now.Add(AccountTTL))
}

// WebSubCallback is the callback URL for feed feedID's WebSub subscription.
func (l Links) WebSubCallback(feedID int64) string {
	return l.Base + Fill(PathWebSub, l.Tokens.Sign(token.WebSub, feedID, time.Time{}))
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
