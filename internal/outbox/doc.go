// Package outbox delivers the queued rows of the outbox, by email and by
// every other channel, and has the effect of the mail that comes back.
// It owns the worker ([Outbox]) that claims due rows under a lease, holds
// paid rows the balance cannot cover or whose address is bouncing,
// charges them, hands them over by their way out (way.go: email through
// a transport of package mailer, or a channel of package channel; a way
// renders, hands rows over and judges failures, every other step is the
// same for all) and settles each failure by its cause (package bounce
// judges it): retried with backoff ([RetryDelay]), failed and refunded,
// counted against the reader only when their address is dead, or, for
// the sender's own problems, held back behind a pause of the destination
// domain ([DestinationPause]). [Returns] has the effect of bounces,
// complaints and unsubscribe requests that came back by mail or from an
// email service (package inbound reads them); [Health] says what
// `feedmail mail health` prints of the store's counts.
//
// It must not compose or transport messages (package mailer does, and
// must not import this one), decide prices (a row's price is set when it
// is queued, the charge and refund keys come from package billing, and
// package store applies them to the ledger), or parse returned mail
// (package inbound). The product rules it follows (retries, bounces,
// holds) are in docs/design.md.
package outbox
