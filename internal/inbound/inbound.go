// Package inbound reads one message that came back to feedmail (a delivery
// status notification, a feedback-loop complaint, an auto-reply or anything
// else) and says what it is: kind, severity, the status and recipient the
// report gives, and the VERP tokens it carries.
//
// It owns the recognition of RFC 3464/6533 DSNs, RFC 5965 ARF reports (and the
// Microsoft, Yahoo and AOL variants), the non-standard bounces of common MTAs
// and providers, and auto-reply markers. It must not verify tokens, touch the
// database or the network, or decide what a report does to a subscription:
// callers do that from the Report. Its work is bounded by Options.MaxBytes,
// a cap on MIME parts and nesting, and regular expressions that run in linear
// time.
//
// Order of the checks: a feedback report, then Amazon SES's JSON (an SNS
// email subscription), then a DSN, then a non-standard bounce, then
// auto-reply markers (DSNs and failure notices carry Auto-Submitted too).
// A message nested or split past the walker's limits is unknown before any
// check, and the text heuristics read no binary.
// A bounce is judged by its cause (package bounce) from the status, the
// diagnostic and the rest of its human text: Report.Cause, Report.Party,
// and Report.Severity, what it counts against the reader's address (hard
// for a dead address, soft for a full mailbox or a too-large message,
// none for anything else). Of several DSN recipients the failed one is
// reported first, then a delayed one.
package inbound

import (
	"bytes"
	"fmt"
	"io"

	"github.com/feedmail/feedmail/internal/bounce"
)

// Kind is what an inbound message is.
type Kind string

// The kinds Parse returns. The caller decides "unsubscribe" from Tokens.
const (
	KindBounce    Kind = "bounce"
	KindComplaint Kind = "complaint"
	KindAutoReply Kind = "auto-reply"
	KindUnknown   Kind = "unknown"
)

// Severity says what a bounce counts toward the reader's address (see
// bounce.Severity): hard for a dead address, soft for a full mailbox or a
// too-large message, none for every other cause.
type Severity string

// Severities. Complaints, auto-replies, unknown messages and bounces whose
// cause is not the reader's address have none.
const (
	SeverityHard Severity = "hard"
	SeveritySoft Severity = "soft"
	SeverityNone Severity = ""
)

// DefaultMaxBytes is the read limit when Options.MaxBytes is zero or less.
const DefaultMaxBytes = 10 << 20

// Options says what Parse needs to know besides the message.
type Options struct {
	// BounceAddress is the configured bounce address, e.g.
	// "bounces@mail.example.org". Addresses "bounces+EXT@mail.example.org"
	// (local part base and domain matched case-insensitively) carry a token
	// EXT. Empty: no tokens are extracted.
	BounceAddress string
	// Recipients are the envelope recipients the MTA gave; tried first.
	Recipients []string
	// MaxBytes is how much Parse reads at most; a larger message is unknown
	// with Reason "too large". Zero or less: DefaultMaxBytes.
	MaxBytes int64
}

// Report is what Parse found. Only Kind is always set.
type Report struct {
	Kind     Kind     `json:"kind"`
	Severity Severity `json:"severity"`
	// Cause is the bounce's reason (package bounce) and Party whose
	// problem it is; bounces only.
	Cause bounce.Reason `json:"cause,omitempty"`
	Party bounce.Party  `json:"party,omitempty"`
	// Status is the enhanced status code ("5.1.1") when known.
	Status string `json:"status,omitempty"`
	// Action is the DSN Action (failed, delayed, ...) or the ARF
	// Feedback-Type (abuse, fraud, ...).
	Action string `json:"action,omitempty"`
	// Recipient is the failed or complained-about address as the report
	// states it: informational, never trusted.
	Recipient string `json:"recipient,omitempty"`
	// Diagnostic is one line from the Diagnostic-Code or the bounce text,
	// at most about 200 runes.
	Diagnostic string `json:"diagnostic,omitempty"`
	// Format names the format that matched (Format* constants).
	Format string `json:"format,omitempty"`
	// Reason says why the kind is unknown.
	Reason string `json:"reason,omitempty"`
	// Tokens are the EXT parts of every bounce+EXT address found, most
	// trusted first: Options.Recipients, the outer Delivered-To,
	// X-Original-To, Envelope-To, X-Envelope-To, To and Cc, then the
	// returned original message's Return-Path and List-Unsubscribe mailto.
	// Deduplicated, case preserved.
	Tokens []string `json:"tokens,omitempty"`
	// OriginalMessageIDs are the Message-IDs of the returned original
	// message, without angle brackets.
	OriginalMessageIDs []string `json:"original_message_ids,omitempty"`
}

// Format values of Report.Format.
const (
	FormatRFC3464    = "rfc3464"   // multipart/report; report-type=delivery-status
	FormatRFC6533    = "rfc6533"   // message/global-delivery-status
	FormatARF        = "arf"       // RFC 5965 feedback report, generic
	FormatJMRP       = "jmrp"      // Microsoft JMRP, ARF or its older attachment form
	FormatYahooCFL   = "yahoo-cfl" // Yahoo complaint feedback loop (ARF)
	FormatAOL        = "aol-fbl"   // AOL feedback loop (ARF)
	FormatPostfix    = "postfix"   // non-DSN Postfix bounce text
	FormatExim       = "exim"
	FormatOpenSMTPD  = "opensmtpd"
	FormatQmail      = "qmail"
	FormatSendmail   = "sendmail"
	FormatExchange   = "exchange"
	FormatGmail      = "gmail"
	FormatYahoo      = "yahoo"
	FormatGeneric    = "generic-bounce"    // a bounce subject or sender, no known MTA text
	FormatAutoHeader = "autoreply-header"  // Auto-Submitted, X-Autoreply, Precedence
	FormatAutoSubj   = "autoreply-subject" // out-of-office subjects only
)

// Limits on the MIME structure Parse walks.
const (
	maxParts = 200
	maxDepth = 10
)

// ReasonNoFormat is the Reason of a readable message that is no report
// and no auto-reply: plain mail, such as an unsubscribe request.
const ReasonNoFormat = "no known format"

// Parse reads one RFC 5322 message from r and classifies it. The error is
// only ever the reader's: bad or hostile input gives KindUnknown with a
// Reason. Tokens are filled whatever the kind, from what is readable (for
// an oversized message, the envelope and the outer header), so callers
// must look at Kind and Reason before acting on them. Parse reads at most
// MaxBytes+1 bytes and does not drain r.
func Parse(r io.Reader, opt Options) (Report, error) {
	limit := opt.MaxBytes
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return Report{}, fmt.Errorf("read inbound message: %w", err)
	}
	if int64(len(data)) > limit {
		rep := unknown("too large")
		hdr, _, _ := parseHeader(data[:limit], true)
		rep.Tokens = newTokenFinder(opt.BounceAddress).collect(opt.Recipients, hdr, nil)
		return rep, nil
	}
	return classify(normalizeCR(data), opt), nil
}

// normalizeCR turns the bare carriage returns of a message written with
// CR-only line endings (old Mac mail tools, some gateways) into line feeds,
// so that every parser below sees lines. A message whose lines end in LF
// or CRLF is returned as it is.
func normalizeCR(data []byte) []byte {
	cr, lf := bytes.Count(data, []byte("\r")), bytes.Count(data, []byte("\n"))
	if cr <= 2*lf {
		return data
	}
	out := make([]byte, 0, len(data))
	for i, c := range data {
		if c == '\r' && (i+1 == len(data) || data[i+1] != '\n') {
			c = '\n'
		}
		out = append(out, c)
	}
	return out
}

// malformed returns why a message is no well-formed report whatever it
// claims to be ("" when it may be one): MIME nested or split beyond the
// walker's limits. Such a message never counts as a bounce, so hostile
// input can have no effect.
func malformed(w *walker, m *message) string {
	switch {
	case w.tooDeep:
		return "MIME nesting too deep"
	case w.budget <= 0:
		return "too many MIME parts"
	}
	return ""
}

// binaryText reports whether more than one in twenty of the characters
// in the first few KiB of text are control characters, which text never
// has. Undecodable bytes do not count: legacy charsets are often
// mislabelled (EUC-JP sent as ISO-2022-JP), and ESC is ISO-2022-JP's.
func binaryText(text string) bool {
	text = text[:min(len(text), 4<<10)]
	bad, all := 0, 0
	for _, r := range text {
		all++
		if r < 0x20 && r != '\n' && r != '\r' && r != '\t' && r != '\f' && r != 0x1b || r == 0x7f {
			bad++
		}
	}
	return all >= 64 && bad*20 > all
}

// unknown returns an unknown report with the reason.
func unknown(reason string) Report {
	return Report{Kind: KindUnknown, Reason: reason}
}

// classify runs the detectors over an in-memory message, most specific
// first: complaints and DSNs before non-standard bounces, and every bounce
// format before auto-reply headers, which DSNs carry too.
func classify(data []byte, opt Options) Report {
	tf := newTokenFinder(opt.BounceAddress)
	if len(bytes.TrimSpace(data)) == 0 {
		rep := unknown("empty")
		rep.Tokens = tf.collect(opt.Recipients, nil, nil)
		return rep
	}
	hdr, body, ok := parseHeader(bytes.TrimLeft(data, "\r\n"), true)
	if !ok {
		rep := unknown("not a message")
		rep.Tokens = tf.collect(opt.Recipients, nil, nil)
		return rep
	}
	w := &walker{budget: maxParts}
	root := w.entity(hdr, body, 0)
	msg := &message{root: root}
	msg.findOriginals()
	if reason := malformed(w, msg); reason != "" {
		rep := unknown(reason)
		rep.Tokens = tf.collect(opt.Recipients, root.header, nil)
		return rep
	}

	rep, matched := classifyComplaint(msg)
	if !matched {
		rep, matched = classifySESJSON(msg)
	}
	if !matched {
		rep, matched = classifyDSN(msg)
	}
	binary := false
	if !matched {
		// Text heuristics read no binary: a bounce-like header on top of
		// it is no bounce.
		if binary = binaryText(msg.text()); !binary {
			rep, matched = classifyTextBounce(msg)
		}
	}
	if !matched {
		rep, matched = classifyAutoReply(msg)
	}
	if !matched {
		rep = unknown(ReasonNoFormat)
		switch {
		case msg.find("message/disposition-notification") != nil:
			rep.Reason = "disposition notification"
		case binary:
			rep.Reason = "binary content"
		}
	}
	blameSender(&rep, msg.originals)
	filterAppliance(&rep, root.header)
	rep.Tokens = tf.collect(opt.Recipients, root.header, msg.originals)
	rep.OriginalMessageIDs = messageIDs(msg.originals)
	rep.Diagnostic = clip(rep.Diagnostic, 200)
	rep.Action = clip(rep.Action, 64)
	rep.Recipient = clip(cleanAddress(rep.Recipient), 320)
	return rep
}
