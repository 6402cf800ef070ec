// Package bounce judges one failed delivery by its cause: from the enhanced
// status code, the SMTP reply code, the diagnostic text and the system that
// reported it, it names a Reason from a fixed vocabulary and the Party whose
// problem it is (the reader's address, this installation as the sender, or
// nobody). Only the reader's-address reasons count toward an address's
// bounce state; the sender's own problems (blocklists, SPF/DKIM/DMARC,
// content, rate limits) never do.
//
// It is the one judgement for every path a failure arrives by: the SMTP
// reply at send time (outbox), a bounce by mail (inbound), and an email
// service's notification (web). It is pure: no I/O, no clock, no state; its
// regular expressions run in linear time, and it looks at a bounded prefix
// of the text.
package bounce
