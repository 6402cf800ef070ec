// Package websub holds the protocol pieces of a WebSub subscriber (W3C
// Recommendation, 23 January 2018): hub and self discovery (Link header
// fields and documents), subscription requests, verification of intent,
// signature checks of content distribution, and when to renew a lease.
//
// It does no I/O of its own: it must not fetch, send requests, answer
// callbacks or touch the store. The poller fetches and sends
// (poller.WebSubManager), the web handler answers the hub, and this package
// decides.
package websub
