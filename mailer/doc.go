// Package mailer turns feed items, digest issues and notices into email
// and delivers it. It owns composing messages from the templates of package
// templates ([Sender.Item], [Sender.Digest], [Sender.Notice]: pure, data in
// and a *mail.Msg out, with feed HTML sanitized by [PrepareHTML]), the
// transports ([SMTPTransport], [Maildir]) and their failure classes
// ([ErrTemporary], [ErrPermanent], [SendError]), and the [Outbox] worker
// that claims queued rows, charges them, sends them and settles each
// failure by its cause (package bounce judges it): retried, failed, counted
// against the reader only when their address is dead, or, for the
// sender's own problems, held back behind a pause of the destination
// domain ([DestinationPause]). The same worker delivers rows whose channel
// is not email through that channel (package channel): rendered by the
// channel from [PostOf] and [IssueOf], claimed, charged, retried and
// refunded by the same code. Each row leaves by one way out, email or the
// channels, picked once from its channel; a way renders, hands rows over
// and judges their failures, and every other step is the worker's, the
// same for all. [Health] says what `feedmail mail health`
// prints of the store's counts.
//
// It must not decide prices: a row's price is set when it is queued, the
// charge and refund keys come from package billing, and package store
// applies them to the ledger. The product rules it follows (sanitizing,
// headers, retries, bounces, holds) are in docs/design.md.
package mailer
