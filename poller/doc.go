// Package poller fetches feeds politely and decides when each one is
// fetched next. It owns the HTTP fetch scheduling (claiming due feeds,
// leases, batched writes of polls), the interval algorithm (Schedule), the
// error penalties, host politeness (HostLimiter, back-offs), the WebSub
// subscriber (WebSubManager), pings (PollFeed), and when the pages of the
// "article" format are fetched under the same host politeness
// (RunArticles; the reading itself is package article's). Product rules
// are in docs/design.md ("Polling interval", "Errors", "Request hygiene")
// and docs/article.md.
//
// It must not parse items or decide which are new (package newitems), send
// or compose mail (package mailer: a poll only queues notices through the
// store), or make HTTP requests but with package fetcher's clients.
//
// A poll runs in steps: pollOne gets a request slot and fetches; evaluate
// parses, asks the store which items are new, and calls Classify, the pure
// classification of the answer (outcome, feed columns, Schedule's
// decision); the pollWriter then records the poll in one transaction.
package poller
