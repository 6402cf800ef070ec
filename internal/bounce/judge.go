package bounce

import (
	"regexp"
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
	// Final is set when the report says delivery was given up (a bounce
	// that is no delay warning): a temporary cause then means the
	// retries ran out (Expired).
	Final bool
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
	reason := judgeReason(status, f.Code, bounded(f.Text), bounded(f.Context), f.Hint, f.Final && !f.Delayed)
	v := Verdict{Reason: reason, Party: reason.Party(), Severity: reason.Severity(), Permanent: permanent}
	if f.Delayed && v.Severity == Hard {
		v.Severity = Soft
	}
	return v
}

// judgeReason picks the reason: a definitive status code, a provider's
// own code, the text's patterns, a specific status code, the context's patterns, the weak
// wordings, the basic code, the hint; then the rules that need the whole
// picture (an unknown user at DATA is a filter; a temporary cause in a
// final report is an expiry; an expiry on a full mailbox is the
// mailbox's). A server that says x.1.1 at DATA means it.
func judgeReason(status string, code int, text, context string, hint Reason, final bool) Reason {
	text, context = strings.ToLower(text), strings.ToLower(context)
	if m := quotedReplyRe.FindStringSubmatchIndex(text); m != nil {
		// A relay quoting the receiver: the receiver's words decide.
		text, context = text[m[2]:], text+"\n"+context
	}
	r, ok := definitiveStatus(status)
	if !ok {
		r, ok = fromProviderCode(text + " " + context)
	}
	if !ok {
		r, ok = fromText(patterns, text)
	}
	if !ok {
		r, ok = fromStatus(status)
	}
	if !ok {
		r, ok = fromText(patterns, context)
	}
	if !ok {
		r, ok = fromText(weakPatterns, text+"\n"+context)
	}
	if !ok {
		r, ok = fromCode(code)
	}
	if !ok && hint.Known() {
		r, ok = hint, true
	}
	if !ok {
		return Undetermined
	}
	switch {
	case code >= 500 && code <= 504 && r.Severity() == Hard && !strings.HasPrefix(rest(status), "1."):
		// A syntax reply names a bad command or parameter, not a dead
		// mailbox, unless its status says the address is bad.
		return Syntax
	case r == UnknownUser && !strings.HasSuffix(status, ".1.1") && genericUnknownRe.MatchString(text) &&
		(dataStageRe.MatchString(text) || dataStageRe.MatchString(context)):
		return Filtered
	case r == Expired && (mailboxFullRe.MatchString(text) || mailboxFullRe.MatchString(context)):
		// The retries ran out on a full mailbox: the mailbox's, soft.
		return MailboxFull
	case r == Temporary && final && (status == "" || status[0] == '4') && code < 500 &&
		(connectRe.MatchString(text) || connectRe.MatchString(context)) && !dnsTrouble(text, context):
		return Expired
	}
	return r
}

// rest returns a status code without its class ("1.1" of "5.1.1").
func rest(status string) string {
	_, r, _ := strings.Cut(status, ".")
	return r
}

// dnsTrouble reports a failure to look the destination up: a network
// problem, not an expiry, even in a final report.
func dnsTrouble(text, context string) bool {
	return dnsRe.MatchString(text) || dnsRe.MatchString(context)
}

// quotedReplyRe finds the receiver's reply that a relaying system quotes
// after its own words.
var quotedReplyRe = regexp.MustCompile(`the error that the other server returned was:\s*(\S.*)`)

var dnsRe = regexp.MustCompile(`name service error|dns error|dns type|name server`)

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
