// Package mailer turns feed items, digests and notices into email messages
// and hands them to a transport.
//
// Composition ([Sender.Item], [Sender.Digest], [Sender.Notice]) is pure: data
// in, a *mail.Msg (github.com/wneessen/go-mail) out, no clock, no network, no
// database. Every message is multipart/alternative with the text part first
// and the HTML part second, built from the html/template and text/template
// files in package templates (email/), parsed once by [LoadTemplates].
//
// Transports ([SMTPTransport] via go-mail, [Maildir]) deliver batches and
// report one result per message; a failure is classified as temporary
// ([ErrTemporary]: retry later) or permanent ([ErrPermanent]: give up), with
// the SMTP reply kept in a [SendError].
//
// # Choices where the design is silent
//
//   - Feed HTML: relative URLs (href, src, srcset, poster, cite, …) are made
//     absolute against the item link (else the feed URL) with
//     golang.org/x/net/html before sanitizing. The sanitizer is bluemonday's
//     UGC policy narrowed for email: only http, https and mailto URLs; no
//     relative URLs left over (they cannot work in a mailbox, so links lose
//     their href and images are dropped); no data: URLs at all, not even
//     images (Gmail and Outlook block them, they bloat messages, and
//     data:image/svg+xml can carry script); no script, style, form, iframe,
//     object, embed, audio or video elements; no event-handler or class
//     attributes; inline style only as text-align on text blocks. Links get
//     rel="noopener noreferrer" and target="_blank".
//   - Embedded players (iframe, embed, object, video, audio) would otherwise
//     vanish without trace, so each one with an http(s) source is replaced by
//     a link to that source ("Embedded content: …"), and the fallback content
//     inside iframe, object, applet and frame elements is kept (it is meant
//     for readers that cannot show the player, as a mailbox cannot) and
//     sanitized like the rest. An image whose source did not survive is
//     replaced by its alt text.
//   - After sanitizing, presentational inline styles are added to img
//     (max-width:100%;height:auto), pre, code, blockquote, table and figure,
//     so wide content never breaks the 640px column on a phone.
//   - The text part is derived from the sanitized HTML: paragraphs separated
//     by a blank line, <br> as a line break, links as "text <url>" (just the
//     URL when the text is the URL), unordered list items as "- ", ordered
//     ones as "1. ", blockquotes prefixed "> ", pre kept verbatim, images as
//     "[alt]", entities decoded. Lines are not re-wrapped: wrapping would break
//     long URLs, and quoted-printable keeps the wire lines short anyway.
//   - Header text (titles, names) has control characters, Unicode line
//     separators and bidi overrides replaced by spaces, whitespace collapsed,
//     and is cut at a sane length (subject 200 characters, feed title in the
//     From name 64, in List-Id 100); non-ASCII text is RFC 2047 encoded.
//     Message-IDs, list ids and URLs given by the caller are validated and
//     rejected (an error, not a silent fix) if they could break a header.
//   - List-Unsubscribe-Post (RFC 8058) is sent whenever the unsubscribe URL is
//     http or https, so development installs with an http BASE_URL behave
//     like production; receivers only honour one-click for https, which is
//     what a production BASE_URL must be.
//   - Every message carries Auto-Submitted: auto-generated (RFC 3834) and
//     X-Auto-Response-Suppress: All, so vacation responders stay quiet.
//     Notices (confirmation, out of credits, feed gone) carry no List-*
//     headers: they are transactional, not list mail.
//   - Titles (item, feed, author) that contain HTML tags or entities are
//     reduced to text; everywhere else a title is text and is escaped.
//   - The HTML part starts with a hidden preheader (the first ~140
//     characters of the text) so inbox previews show the post, not the
//     layout.
//   - Dates shown in a message body are dates only ("January 2, 2006") in
//     UTC: the recipient's zone is not known at composition time.
//   - Date is required (composition has no clock); an empty MessageID gets a
//     random one at the sender's domain, but callers should pass a stable one
//     (see [Sender.MessageID]) so retries and duplicates thread together.
package mailer
