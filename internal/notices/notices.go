// Package notices holds the words of every free email feedmail sends (a
// store.Notice: subject, paragraphs and buttons) and the dedupe key each is
// queued under. Callers decide when to send; this package only says what.
// It must not touch the database or the network, and must not import web,
// poller or mailer (they all import it).
package notices

import (
	"fmt"
	"strings"
	"time"

	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/store"
)

// DeliveryInstant is how Confirm describes instant delivery.
const DeliveryInstant = "every new post in its own email, as soon as we see it"

// DeliveryDigest is how Confirm describes delivery into the digest named
// name, made from the preset labelled label.
func DeliveryDigest(name, label string) string {
	return "in your digest “" + name + "” (" + label + ")"
}

// ConfirmSubject is the subject of every confirmation email. It never
// names the feed: anyone may type any address into the signup form, and
// a feed's title is whatever its publisher (or an attacker) chose, so it
// must not speak in feedmail's name in an inbox's list of subjects. The
// body names the feed, quoted and cut short (quotedTitle).
const ConfirmSubject = "Confirm your feedmail subscription"

// AlreadySubject is the subject of AlreadySubscribed (no feed in it, for
// the same reason).
const AlreadySubject = "You already get this feed from feedmail"

// maxTitleInBody bounds how much of a feed's title an email quotes.
const maxTitleInBody = 100

// quotedTitle is a feed's title as the body of a confirmation quotes it:
// white space runs made one space, cut to maxTitleInBody characters, in
// quotation marks, so it reads as the feed's words, not feedmail's.
func quotedTitle(title string) string {
	title = strings.Join(strings.Fields(title), " ")
	if r := []rune(title); len(r) > maxTitleInBody {
		title = string(r[:maxTitleInBody]) + "…"
	}
	return "“" + title + "”"
}

// Confirm asks a person who used the signup form to confirm subscription
// subID to title (at feedURL), delivered as delivery says (DeliveryInstant
// or DeliveryDigest). It returns the dedupe key (one per
// subscription per minute) and the notice.
func Confirm(l links.Links, now time.Time, subID int64, title, feedURL, email, delivery string) (string, store.Notice) {
	return fmt.Sprintf("confirm:%d:%d", subID, now.Unix()/60), store.Notice{
		Subject: ConfirmSubject,
		Text: "Someone (hopefully you) asked feedmail to send new posts from the feed " + quotedTitle(title) + " (" + feedURL +
			") to " + email + ", " + delivery + ".\n\nPress the button to confirm. If this was not you, ignore this email: " +
			"nothing will be sent.",
		Links: []store.NoticeLink{{Label: "Confirm subscription", URL: l.Confirm(subID, now)}},
	}
}

// ConfirmByOperator asks a person to confirm subscription subID to title
// that the operator added for them (`feedmail subscribe`). Same key as
// Confirm.
func ConfirmByOperator(l links.Links, now time.Time, subID int64, title, email string) (string, store.Notice) {
	return fmt.Sprintf("confirm:%d:%d", subID, now.Unix()/60), store.Notice{
		Subject: ConfirmSubject,
		Text: "Someone (hopefully you, or the operator of this feedmail for you) asked feedmail to send new posts from the feed " +
			quotedTitle(title) + " to " + email + ".\n\nPress the button to confirm. If you did not expect this, ignore this " +
			"email: nothing will be sent.",
		Links: []store.NoticeLink{{Label: "Confirm subscription", URL: l.Confirm(subID, now)}},
	}
}

// AlreadySubscribed tells a person that the signup form asked again for a
// feed they already get (subscription subID): nothing changed, and a
// sign-in link lets them change it.
func AlreadySubscribed(l links.Links, now time.Time, subID, userID int64, title, email string) (string, store.Notice) {
	return fmt.Sprintf("already:%d:%d", subID, now.Unix()/60), store.Notice{
		Subject: AlreadySubject,
		Text: "Someone (hopefully you) asked feedmail to send new posts from the feed " + quotedTitle(title) + " to " + email +
			". You already get them, so nothing changed.\n\nTo change how you get them, open your account.",
		Links: []store.NoticeLink{{Label: "Open my account", URL: l.SignIn(userID, now)}},
	}
}

// SignIn is the sign-in link asked for on the sign-in form (one per person
// per minute).
func SignIn(l links.Links, now time.Time, userID int64, email string) (string, store.Notice) {
	return fmt.Sprintf("signin:%d:%d", userID, now.Unix()/60), store.Notice{
		Subject: "Your feedmail sign-in link",
		Text: "Someone (hopefully you) asked for a link to the feedmail account of " + email +
			".\n\nThe button opens your account; it works for an hour. If this was not you, ignore this email.",
		Links: []store.NoticeLink{{Label: "Open my account", URL: l.SignIn(userID, now)}},
	}
}

// ImportConfirm asks a person to confirm, on their account page, the added
// feeds the operator imported for them from an OPML list.
func ImportConfirm(l links.Links, now time.Time, userID int64, email string, added int) (string, store.Notice) {
	feeds := "1 feed was"
	if added != 1 {
		feeds = fmt.Sprintf("%d feeds were", added)
	}
	return fmt.Sprintf("import:%d:%d", userID, now.Unix()), store.Notice{
		Subject: "Confirm the feeds imported into your feedmail",
		Text: feeds + " imported for " + email + " from a subscription list. Nothing is sent until you confirm " +
			"them on your account page.\n\nIf you did not expect this, ignore this email: nothing will be sent.",
		Links: []store.NoticeLink{{Label: "Review and confirm", URL: l.Account(userID, now)}},
	}
}
