// Package recovery finds where a feed went: one bounded rediscovery attempt
// for a feed that fails (or froze while its site moved on). It owns the
// candidate addresses and their order (plan.go), what an HTML page found on
// the way says (page.go), the same-feed comparison and the verdict on each
// candidate (judge.go), and the attempt that ties them together within a
// budget of requests (attempt.go).
//
// The verdicts: a candidate with posts in common with the old feed is "the
// same feed" (moved); one of the same site without posts in common is
// "probably" the new feed (offered to readers); nothing else is trusted.
// Never another registrable domain unless the old host itself permanently
// redirected there, never a candidate reached through a temporary redirect,
// a parked or login page, or a self link to http without posts in common.
//
// It must not write to the store, send mail, or make requests except through
// the Fetch it is given (the caller's guarded client and host limits): what
// it learned is in the Result, and the caller acts on it.
package recovery
