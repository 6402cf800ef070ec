// Package digest batches new posts into scheduled emails. It owns the
// schedules (cron specs in the person's time zone, see [Schedule]), the
// price of an issue ([Charge]), the [Worker] that claims due digests under
// a lease and turns each slot's waiting items into one issue and one outbox
// email (package store writes them, one transaction per batch), and the
// outbox [Renderer] that composes an issue's email when it is sent.
//
// It must not send SMTP itself: the mailer's outbox worker sends, charges
// and retries issues like any other email. The product rules (missed slots
// collapse, empty slots send nothing, held issues absorb later slots) are
// in docs/design.md.
package digest
