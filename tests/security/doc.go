// Package security holds feedmail's cross-cutting security tests: the
// private-network guard seen through the poller, signup and WebSub;
// hostile feed content carried end to end from a feed to the rendered
// email and to the pages that show it; header injection through titles;
// token tampering, expiry and cross-account use on every route that takes
// a token; cross-site request forgery on every form; and forged and
// replayed webhooks (Stripe, and the email services' bounce callbacks).
//
// The package has no code of its own. README.md maps each threat to the
// test that covers it, here or in the package that owns the code.
package security
