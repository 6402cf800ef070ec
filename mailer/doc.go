// Package mailer turns feed items, digest issues and notices into email
// and delivers it. It owns composing messages from the templates of package
// templates ([Sender.Item], [Sender.Digest], [Sender.Notice]: pure, data in
// and a *mail.Msg out, with feed HTML sanitized by [PrepareHTML]), the
// transports ([SMTPTransport], [Maildir]) and their failure classes
// ([ErrTemporary], [ErrPermanent], [SendError]), and the [Outbox] worker
// that claims queued rows, charges them, sends them and retries or fails
// them, counting hard bounces.
//
// It must not decide prices: a row's price is set when it is queued, the
// charge and refund keys come from package billing, and package store
// applies them to the ledger. The product rules it follows (sanitizing,
// headers, retries, bounces, holds) are in docs/design.md.
package mailer
