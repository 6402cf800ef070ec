// Package mailer composes email and transports it. It owns composing
// messages from the templates of package templates ([Sender.Item],
// [Sender.Digest], [Sender.Notice]: pure, data in and a *mail.Msg out,
// with feed HTML sanitized by [PrepareHTML]), the views of stored posts,
// issues and notices that emails and channels show ([ItemEmailOf],
// [DigestEmailOf], [PostOf], [IssueOf]), the headers of complaint routing
// ([FeedbackID]), the transports ([SMTPTransport], [Maildir], DKIM
// signing) and their failure classes ([ErrTemporary], [ErrPermanent],
// [SendError]).
//
// It must not queue, claim, charge, retry or settle deliveries, nor read
// what came back: that is package outbox, which composes and sends
// through this one (this package must never import it). It must not
// decide prices. The product rules it follows (sanitizing, headers) are
// in docs/design.md.
package mailer
