// Package billing owns the rules of paying for email: the prices of email
// in credits (prices.go: an instant email, a digest issue; nothing else in
// the code writes a price), burst protection ([FeedRate], [PostCharge]),
// the credit ledger rules (entry kinds and the sign of their amounts,
// balance arithmetic in [CheckEntry] and [Apply], and the idempotency keys
// of charges, refunds and out-of-credits notices), the credit packs and
// their prices ([ParsePacks], FEEDMAIL_CREDIT_PACKS), and buying credits
// with Stripe Checkout and its signed webhook ([Stripe]), and who pays how
// much for an email of an owner-paid feed ([InstantBill], [DigestBill]).
//
// It must not send email and must not run SQL: package store keeps the
// ledger and applies these rules in its transactions, and the mailer
// charges and refunds with the keys made here. The product rules are in
// docs/design.md.
package billing
