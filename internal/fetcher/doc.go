// Package fetcher makes the HTTP requests of the poller: one conditional
// GET per feed URL (Client.Fetch, following redirects hop by hop), with the
// request hygiene of docs/design.md ("Request hygiene"): an identifying
// User-Agent, Accept and Accept-Encoding "gzip, br", stored validators sent
// only to the URL they came from, no cookies, no Referer, no Cache-Control,
// kept-alive connections. It owns the private-network guard (in the
// dialer, so it sees every address actually dialled), the decoding and size
// cap of bodies, and the classification of failures (Kind) and their
// wording (Describe).
//
// It must not decide anything about a feed (schedule, penalties, parsing:
// package poller and newitems), touch the store, or log: everything it
// learns is in the Response or the error, and the caller logs once.
package fetcher
