// Package digest batches new posts into scheduled emails. It owns the
// schedules (cron specs in the person's time zone, see [Schedule]), the
// [Worker] that claims due digests under a lease and turns each slot's waiting items into one issue and one outbox
// email (package store writes them, one transaction per batch), and the
// name of an issue's edition ([Edition]).
//
// It must not render or send an issue: the mailer's outbox worker renders
// it, sends, charges and retries it like any other delivery. The product rules (missed slots
// collapse, empty slots send nothing, held issues absorb later slots) are
// in docs/design.md. The price of an issue is billing's (DigestCharge).
package digest
