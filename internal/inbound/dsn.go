package inbound

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/feedmail/feedmail/internal/bounce"
)

// statusRe finds an enhanced status code (RFC 3463).
var statusRe = regexp.MustCompile(`\b([245])\.(\d{1,3})\.(\d{1,3})\b`)

// classifyDSN recognises an RFC 3464 (or RFC 6533 global) delivery status
// notification and reports its most severe recipient. A delivery-status
// part without any per-recipient field is left to the text heuristics.
func classifyDSN(m *message) (Report, bool) {
	e := m.find("message/delivery-status", "message/global-delivery-status")
	if e == nil {
		return Report{}, false
	}
	format := FormatRFC3464
	if e.mediaType == "message/global-delivery-status" {
		format = FormatRFC6533
	}
	var best header
	bestRank := 0
	for _, b := range fieldBlocks(string(e.body)) {
		if !isRecipientBlock(b) {
			continue
		}
		if r := actionRank(b); r > bestRank {
			best, bestRank = b, r
		}
	}
	if best == nil {
		return Report{}, false
	}
	rep := dsnRecipient(best, m.text())
	rep.Format = format
	return rep, true
}

// fieldBlocks splits a DSN or feedback-report body into its blocks of
// fields, skipping blank and malformed lines.
func fieldBlocks(body string) []header {
	var blocks []header
	rest := []byte(strings.ToValidUTF8(body, "\uFFFD"))
	for len(rest) > 0 {
		h, next, ok := parseHeader(rest, false)
		if !ok {
			_, rest = cutLine(rest)
			continue
		}
		blocks = append(blocks, h)
		rest = next
	}
	return blocks
}

// isRecipientBlock reports whether a block has per-recipient DSN fields.
func isRecipientBlock(h header) bool {
	return h.has("Final-Recipient") || h.has("Original-Recipient") ||
		h.has("Action") || h.has("Status")
}

// actionRank orders recipients: failed first, then delayed, then the rest.
func actionRank(h header) int {
	switch firstWord(h.get("Action")) {
	case "failed":
		return 3
	case "delayed":
		return 2
	}
	return 1
}

// firstWord returns the lower-cased first word of a field value, without
// comments or parameters.
func firstWord(v string) string {
	v = strings.ToLower(strings.TrimSpace(v))
	if i := strings.IndexAny(v, " \t;("); i >= 0 {
		v = v[:i]
	}
	return v
}

// dsnRecipient turns one per-recipient block into a report, judged by its
// cause (package bounce) from the status, the diagnostic and the human
// text; delivered, relayed and expanded are unknown.
func dsnRecipient(h header, human string) Report {
	action := firstWord(h.get("Action"))
	diag := diagnosticValue(h.get("Diagnostic-Code"))
	status := statusRe.FindString(h.get("Status"))
	if status == "" {
		status = statusRe.FindString(diag)
	}
	rep := Report{
		Kind:       KindBounce,
		Action:     action,
		Status:     status,
		Diagnostic: diag,
		Recipient:  h.get("Final-Recipient"),
	}
	if rep.Recipient == "" {
		rep.Recipient = h.get("Original-Recipient")
	}
	switch action {
	case "delivered", "relayed", "expanded":
		rep.Kind, rep.Reason = KindUnknown, action+" DSN"
		return rep
	}
	if status != "" && status[0] == '2' {
		rep.Kind, rep.Reason = KindUnknown, "delivered DSN"
		return rep
	}
	head, _ := splitQuoted(human)
	judge(&rep, bounce.Failure{Status: status, Code: replyCodeIn(diag), Text: diag, Context: head,
		Delayed: action == "delayed", Final: action != "delayed"})
	return rep
}

// judge sets the cause, party and severity of a bounce report from f.
func judge(rep *Report, f bounce.Failure) {
	v := bounce.Judge(f)
	rep.Cause, rep.Party, rep.Severity = v.Reason, v.Party, Severity(v.Severity)
}

// replyCodeIn returns the first basic SMTP reply code in text, 0 if none.
func replyCodeIn(text string) int {
	if mm := smtpCodeRe.FindStringSubmatch(text); mm != nil {
		n, _ := strconv.Atoi(mm[1])
		return n
	}
	return 0
}

// replyContRe matches the code prefixes of the continuation lines of a
// multi-line SMTP reply ("550-5.1.1 ") after unfolding.
var replyContRe = regexp.MustCompile(`\s[245][0-9][0-9][ -]([245]\.[0-9]{1,3}\.[0-9]{1,3}\s)?`)

// diagnosticValue strips the diagnostic type ("smtp;") from a
// Diagnostic-Code value, and the repeated reply codes of a multi-line
// SMTP reply.
func diagnosticValue(v string) string {
	if t, rest, ok := strings.Cut(v, ";"); ok && len(t) < 20 && !strings.ContainsAny(t, " <@") {
		v = rest
	}
	v = strings.TrimSpace(v)
	if len(v) > 4 && v[3] == '-' && replyContRe.MatchString(" "+v[:4]) {
		first, rest := v[:4], v[4:]
		return first + replyContRe.ReplaceAllString(rest, " ")
	}
	return v
}

// smtpCodeRe finds a basic SMTP reply code where bounce texts put one:
// at a line start, after "said:", "<<<", "#", "error:" or "reply:".
var smtpCodeRe = regexp.MustCompile(`(?im)(?:^|said:|<<<|#|error:|reply:|\()[ \t]*([245][0-5][0-9])(?:[ \t\-:]|$)`)

// quotaRe and hardRe are the phrases that, with a daemon sender, make a
// text a bounce and point to its diagnostic line (the judgement itself is
// package bounce's).
var (
	quotaRe = regexp.MustCompile(`(?i)mailbox (is )?full|over ?quota|quota (exceeded|full)|exceeded (its |the )?(storage|quota)|insufficient (system )?storage|mailbox size limit|out of storage`)
	hardRe  = regexp.MustCompile(`(?i)user unknown|unknown user|no such (user|mailbox|recipient|address)|does not exist|doesn't exist|doesn't have an? [^\n]*account|recipient address rejected|invalid recipient|unrouteable address|recipnotfound|not listed in|mailbox unavailable|account (has been )?disabled|address rejected|failed permanently|permanent (fatal )?error`)
)
