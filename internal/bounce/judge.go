package bounce

import (
	"strings"
)

// Failure is what is known about one failed delivery.
type Failure struct {
	// Status is the RFC 3463 enhanced status code ("5.7.1"), if any.
	Status string
	// Code is the basic SMTP reply code (550), 0 if none.
	Code int
	// Text is the diagnostic: the SMTP reply text, a DSN's
	// Diagnostic-Code, or the line of a bounce that holds the error. Only
	// its first MaxText bytes are read.
	Text string
	// Context is more text from the report (the rest of a bounce's human
	// part): read after the status code, when Text names no cause.
	Context string
	// Hint is a reason the reporting system itself gave (an email
	// service's bounce type mapped to the vocabulary), used when neither
	// the code nor the text decides. Empty: none.
	Hint Reason
	// Delayed is set when the report says the message is still being
	// retried (a DSN with Action: delayed): never a hard failure.
	Delayed bool
}

// Verdict is the judgement of a Failure.
type Verdict struct {
	Reason   Reason   `json:"reason"`
	Party    Party    `json:"party"`
	Severity Severity `json:"severity,omitempty"`
	// Permanent says a retry of the same message will not succeed soon:
	// a 5xx reply or a final report. Sender-side failures are retried
	// later all the same, after the destination's backoff.
	Permanent bool `json:"permanent"`
}

// MaxText bounds how much of Failure.Text is read.
const MaxText = 8 << 10

// Judge returns the verdict on f: a reason from the text patterns when one
// matches (they are more specific than most codes), else from the enhanced
// status code, else from the context's patterns, else from the basic reply
// code, else the hint, else Undetermined. A delayed report keeps its
// reason but never counts hard.
func Judge(f Failure) Verdict {
	status := normalStatus(f.Status)
	permanent := status != "" && status[0] == '5' || status == "" && f.Code >= 500 && f.Code < 600
	if f.Delayed {
		permanent = false
	}
	reason := judgeReason(status, f.Code, bounded(f.Text), bounded(f.Context), f.Hint)
	v := Verdict{Reason: reason, Party: reason.Party(), Severity: reason.Severity(), Permanent: permanent}
	if f.Delayed && v.Severity == Hard {
		v.Severity = Soft
	}
	return v
}

// judgeReason picks the reason: text, then status, then context, then
// code, then hint.
func judgeReason(status string, code int, text, context string, hint Reason) Reason {
	if r, ok := fromText(strings.ToLower(text)); ok {
		return r
	}
	if r, ok := fromStatus(status); ok {
		return r
	}
	if r, ok := fromText(strings.ToLower(context)); ok {
		return r
	}
	if r, ok := fromCode(code); ok {
		return r
	}
	if hint.Known() {
		return hint
	}
	return Undetermined
}

// normalStatus returns s if it is an enhanced status code of class 2, 4
// or 5, else "".
func normalStatus(s string) string {
	s = strings.TrimSpace(s)
	parts := strings.Split(s, ".")
	if len(parts) != 3 || len(parts[0]) != 1 || strings.IndexByte("245", parts[0][0]) < 0 {
		return ""
	}
	for _, p := range parts[1:] {
		if p == "" || len(p) > 3 || strings.Trim(p, "0123456789") != "" {
			return ""
		}
	}
	return s
}

// bounded returns at most the first MaxText bytes of s.
func bounded(s string) string {
	if len(s) > MaxText {
		return s[:MaxText]
	}
	return s
}
