// Package preview owns the preview of what a subscription would send,
// for a person who has not subscribed (or is changing a subscription):
// the email of a feed's newest post in a format, or a sample issue of a
// digest made of the feed's recent posts, with what the choice would
// cost a month. It composes through package mailer's own composition
// (mailer.Sender.PreviewItem and PreviewDigest, the outbox's functions
// with placeholders for the reader's own parts), finds the feed as
// signup does (package subscribe: one fetch through the fetcher and its
// private-network guard, none for a feed polled lately, whose stored
// items serve instead), keeps what it fetched for a few minutes so that
// previews of one feed reuse one fetch, reads an article page as package
// article does, and limits previews per client and per feed.
//
// It must not send anything nor write to the store: a previewed feed is
// not added to it (only feeds with an active, confirmed subscription are
// polled, and a preview subscribes nobody); no account, subscription,
// outbox row, digest or ledger entry is made.
package preview
