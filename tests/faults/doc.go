// Package faults holds the cross-cutting fault matrix: table tests in which
// each row is a hostile feed server, a misbehaving SMTP server or a full
// disk, driven through the real paths — the poller worker (poller.PollDue)
// on a store from storetest.Open, and the outbox worker (outbox.Outbox) over
// an smtptest server or a Maildir — and checked for two things:
//
//   - the documented outcome of the row (a penalty with its public reason,
//     a retry with backoff, or a failed email with its refund), and
//   - that nothing stored is lost: the items and queued email that existed
//     before the fault are still there afterwards, and a later good poll or
//     send works and delivers everything exactly once.
//
// The package has no code of its own; the tests are the product. Run it
// with the rest of the suite (go test -race ./tests/faults/); it needs no network
// beyond loopback. The per-package tests it builds on (poller's
// TestHostileServers, mailer's TestOutboxSMTPFaults, TestMaildirFullDisk)
// check the same faults one layer at a time; this package checks them end
// to end, feed to mailbox.
package faults
