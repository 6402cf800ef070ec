// Package channel is the one seam between the outbox and a way out other
// than email: a [Channel] renders a post or a digest issue for its service
// as one HTTP request, delivers it, and judges a failure (retry later, the
// target is gone, or the target refused it). Each channel is one package
// under internal/channel (webhook, slack, discord, ntfy, matrix), and
// package channels registers them all in one place. It also owns the
// shared pieces of those packages: the content of a delivery ([Post],
// [Issue]), sending a request ([Send]) and the judgement of an HTTP answer
// ([JudgeHTTP]), with Retry-After read the way RFC 9110 writes it.
//
// It must not touch the store, price, retry or charge anything: the
// mailer's outbox worker claims, charges, retries and settles every
// delivery alike, whatever its channel, and builds the content from the
// store. Email itself goes out by the mailer's transports.
package channel
