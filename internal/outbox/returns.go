package outbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/feedmail/feedmail/internal/bounce"
	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/inbound"
	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/metrics"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/token"
	"github.com/feedmail/feedmail/mailer"
)

// Returns handles the mail that comes back to the bounce address: it
// classifies one message (package inbound), finds the email it is about
// from the signed token of the address it came to (or, for a complaint,
// the returned email's Message-ID), and has its effect in the store once.
// Used by `feedmail inbound` (one message piped by an MTA) and by the
// inbound role (an IMAP mailbox).
type Returns struct {
	Store   *store.Store
	Links   links.Links // with the bounce address and the signer
	Clock   clock.Clock
	Log     *slog.Logger
	Metrics *metrics.Metrics
	// BounceLimit: consecutive hard bounces that mark an address bouncing
	// (DefaultBounceLimit when 0), as for SMTP refusals.
	BounceLimit int
	// MaxBytes: the most of a message read (inbound.DefaultMaxBytes when 0).
	MaxBytes int64
}

// Outcome is what became of one message: the JSON line `feedmail inbound`
// prints.
type Outcome struct {
	Kind      string `json:"kind"`     // bounce, complaint, unsubscribe, auto-reply, unknown
	Severity  string `json:"severity"` // hard, soft or "" (bounces only)
	Recipient string `json:"recipient"`
	Action    string `json:"action"`
	Status    string `json:"status,omitempty"`
	Reason    string `json:"reason,omitempty"` // bounces: the cause (package bounce)
	Party     string `json:"party,omitempty"`  // bounces: reader, sender or none
	Format    string `json:"format,omitempty"`
	Email     int64  `json:"email,omitempty"` // the outbox row it was about
}

// Handle reads one message from msg (recipients: the envelope recipients
// the MTA gave, if any) and has its effect. It returns an error only when
// trying again later may work (the store failed): bad input, reports about
// email feedmail never sent and forged tokens are an Outcome of kind
// "unknown" with a nil error.
func (r *Returns) Handle(ctx context.Context, msg io.Reader, recipients []string) (Outcome, error) {
	rep, err := inbound.Parse(msg, inbound.Options{BounceAddress: r.Links.Bounce, Recipients: recipients, MaxBytes: r.MaxBytes})
	if err != nil {
		return Outcome{}, fmt.Errorf("%w: %w", mailer.ErrTemporary, err)
	}
	return r.apply(ctx, rep, store.MailSourceMail)
}

// Notice is a bounce or complaint an email service reported over HTTP
// (package web reads each service's format into one).
type Notice struct {
	Kind      inbound.Kind   // inbound.KindBounce or inbound.KindComplaint
	Failure   bounce.Failure // bounces: what the service said about the failure
	Recipient string         // the address as the service names it (informational)
	// MessageIDs are the Message-IDs of the email it is about, Tokens
	// the signed return tokens the service passed back (either finds the
	// email; neither is trusted without a match).
	MessageIDs []string
	Tokens     []string
	Format     string // the service ("ses", "postmark", ...)
}

// HandleNotice judges n like a bounce by mail (package bounce) and has its
// effect once, as Handle does; the same error rules apply.
func (r *Returns) HandleNotice(ctx context.Context, n Notice) (Outcome, error) {
	rep := inbound.Report{Kind: n.Kind, Recipient: n.Recipient, Format: n.Format, Tokens: n.Tokens,
		OriginalMessageIDs: n.MessageIDs, Status: n.Failure.Status, Diagnostic: n.Failure.Text, Action: "failed"}
	if n.Failure.Delayed {
		rep.Action = "delayed"
	}
	if n.Kind == inbound.KindBounce {
		v := bounce.Judge(n.Failure)
		rep.Cause, rep.Party, rep.Severity = v.Reason, v.Party, inbound.Severity(v.Severity)
	}
	return r.apply(ctx, rep, store.MailSourceWebhook)
}

// apply finds the email rep is about and has its effect once.
func (r *Returns) apply(ctx context.Context, rep inbound.Report, source string) (Outcome, error) {
	var err error
	out := Outcome{Kind: string(rep.Kind), Severity: string(rep.Severity), Recipient: rep.Recipient,
		Status: rep.Status, Format: rep.Format, Reason: string(rep.Cause), Party: string(rep.Party)}
	id, purpose := r.resolve(rep)
	var effect store.Report
	switch {
	case purpose == token.MailUnsubscribe && isUnsubscribeRequest(rep):
		out.Kind, out.Severity, out.Reason, out.Party = store.InboundUnsubscribe, "", "", ""
		effect = store.Report{Kind: store.InboundUnsubscribe}
	case rep.Kind == inbound.KindBounce || rep.Kind == inbound.KindComplaint:
		if id == 0 {
			if id, err = r.Store.OutboxByMessageID(ctx, rep.OriginalMessageIDs); err != nil && !errors.Is(err, store.ErrNoSuchEmail) {
				return Outcome{}, fmt.Errorf("%w: %w", mailer.ErrTemporary, err)
			}
		}
		effect = store.Report{Kind: string(rep.Kind), Severity: string(rep.Severity), Reason: string(rep.Cause),
			Party: string(rep.Party), Final: rep.Action != "delayed", Status: rep.Status, Detail: rep.Diagnostic}
		if rep.Kind == inbound.KindComplaint {
			effect.Kind, effect.Severity, effect.Reason, effect.Party, effect.Final = store.InboundComplaint, "", "", "", false
		}
	default:
		out.Action = "ignored"
		if rep.Reason != "" {
			out.Action += ": " + rep.Reason
		}
		r.finish(ctx, out)
		return out, nil
	}
	if id == 0 {
		out.Kind, out.Severity, out.Action = string(inbound.KindUnknown), "", "ignored: names no email of ours"
		r.finish(ctx, out)
		return out, nil
	}
	effect.OutboxID, effect.BounceLimit, effect.Source = id, r.BounceLimit, source
	if effect.BounceLimit == 0 {
		effect.BounceLimit = DefaultBounceLimit
	}
	res, err := r.Store.ApplyReport(ctx, effect)
	switch {
	case errors.Is(err, store.ErrNoSuchEmail):
		out.Kind, out.Severity, out.Action = string(inbound.KindUnknown), "", "ignored: the email it names is no longer kept"
	case err != nil:
		return Outcome{}, fmt.Errorf("%w: %w", mailer.ErrTemporary, err)
	default:
		out.Email, out.Recipient, out.Action = id, res.Address, res.Action
	}
	r.finish(ctx, out)
	return out, nil
}

// isUnsubscribeRequest reports whether a message sent to an unsubscribe
// address asks to unsubscribe: anything but a bounce or a complaint does,
// whatever its client adds (Apple Mail marks its request
// Auto-Submitted: auto-replied). A delivery report is about the request
// itself, not a request.
func isUnsubscribeRequest(rep inbound.Report) bool {
	switch rep.Kind {
	case inbound.KindBounce, inbound.KindComplaint:
		return false
	case inbound.KindUnknown:
		return rep.Reason == inbound.ReasonNoFormat
	}
	return true
}

// resolve returns the outbox row named by the first token in rep that this
// install signed, and the token's purpose; 0 when none is ours.
func (r *Returns) resolve(rep inbound.Report) (int64, string) {
	for _, tok := range rep.Tokens {
		if id, purpose, err := r.Links.ResolveReturn(tok, r.Clock.Now()); err == nil {
			return id, purpose
		}
	}
	return 0, ""
}

// finish counts and logs an outcome: effects at info, the rest at debug;
// a bounce of ours for the sender's own sake (a blocklisting, DMARC …)
// at warn, with what to check, and counted as a sender-side failure: the
// operator must act, the reader cannot.
func (r *Returns) finish(ctx context.Context, out Outcome) {
	sender := out.Email != 0 && out.Party == string(bounce.PartySender)
	if r.Metrics != nil {
		r.Metrics.Inbound.WithLabelValues(out.Kind, out.Severity).Inc()
		if sender {
			r.Metrics.SenderFailures.WithLabelValues(out.Reason).Inc()
		}
	}
	if r.Log == nil {
		return
	}
	level := slog.LevelInfo
	switch {
	case sender:
		r.Log.Warn("mail refused for the sender's own sake", "reason", out.Reason, "status", out.Status,
			"format", out.Format, "email", out.Email, "fix", bounce.Reason(out.Reason).Fix())
		return
	case out.Email == 0:
		level = slog.LevelDebug
	}
	r.Log.Log(ctx, level, "inbound mail", "kind", out.Kind, "severity", out.Severity, "reason", out.Reason,
		"status", out.Status, "format", out.Format, "email", out.Email, "action", out.Action)
}
