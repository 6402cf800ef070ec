package inbound

import (
	"html"
	"regexp"
	"strconv"
	"strings"

	"github.com/feedmail/feedmail/internal/bounce"
)

// signature recognises a bounce by its subject or by text its MTA writes.
type signature struct {
	re     *regexp.Regexp
	format string
	delay  bool // a delay warning: the message is still being retried
}

func sig(re, format string, delay bool) signature {
	return signature{regexp.MustCompile(re), format, delay}
}

// bodySignatures are sentences that only bounce generators write; they
// identify the MTA or provider on their own.
var bodySignatures = []signature{
	sig(`(?i)this is the qmail-send program`, FormatQmail, false),
	sig(`(?i)sorry,? we were unable to deliver your message`, FormatYahoo, false),
	sig(`(?i)this message was created automatically by mail delivery software`, FormatExim, false),
	sig(`(?i)this is the (mail system|postfix program) at host`, FormatPostfix, false),
	sig(`(?i)-+ ?transcript of session follows ?-+|the original message was received at`, FormatSendmail, false),
	sig(`(?i)delivery to the following recipients? has been delayed`, FormatGmail, true),
	sig(`(?i)delivery to the following recipients? failed permanently`, FormatGmail, false),
	sig(`(?i)your message did not reach some or all of the intended recipients|delivery has failed to these recipients or groups|your message (to [^\n]* )?couldn't be delivered|did not reach the following recipient`, FormatExchange, false),
	sig(`(?i)this is the mailer-daemon, please do not reply|a message is delayed for more than`, FormatOpenSMTPD, false),
	sig(`(?i)a message that you sent (could not be delivered|contained one or more recipient addresses)|message log follows:|failed addresses follow:`, FormatExim, false),
	sig(`(?i)could not be delivered to: <|each of the following recipients was rejected by a remote mail server|unable to deliver message to the following address|automatically generated delivery status notification|error: invalid user address|you are not a member of this mailing list`, FormatGeneric, false),
	// MDaemon, InterScan, Symantec and other gateways' own wordings.
	sig(`(?i)permanent fatal delivery errors|the following addresses did not receive a copy of your message|(?:a message|the email below) could not be delivered to|could not be delivered to the following (?:user|recipient)|could not deliver message to the following recipient|your message could not be delivered to[ \t]*\r?\n|your message has not been delivered|the following mail has been returned because it encountered an error|^[ \t]*-+ ?non-delivery report ?-+`, FormatGeneric, false),
	sig(`(?i)this is an automated message created by mail delivery software`, FormatGeneric, false),
	sig(`邮件无法发送到您指定的地址`, FormatGeneric, false), // Sina
}

// subjectSignatures are bounce subjects; alone they need a daemon sender,
// a null envelope sender or a returned original to count.
var subjectSignatures = []signature{
	sig(`(?i)^failure notice`, FormatQmail, false),
	sig(`(?i)^failed mail\b|^non-delivery\b`, FormatGeneric, false),
	sig(`(?i)^mail delivery warning|^warning: message has not yet been delivered`, FormatGeneric, true),
	sig(`(?i)^mail delivery failed`, FormatExim, false),
	sig(`(?i)^warning: message .* delayed`, FormatExim, true),
	sig(`(?i)^returned mail:`, FormatSendmail, false),
	sig(`(?i)^warning: could not send message`, FormatSendmail, true),
	sig(`(?i)^undeliverable:`, FormatExchange, false),
	sig(`(?i)^delivery status notification \(failure\)`, FormatGmail, false),
	sig(`(?i)^delivery status notification \(delay\)`, FormatGmail, true),
	sig(`(?i)^undelivered mail returned to sender`, FormatPostfix, false),
	sig(`(?i)^delayed mail \(still being retried\)`, FormatPostfix, true),
	sig(`(?i)^(mail |message )?delivery (failure|failed|has failed|problem|notification)|^(message|mail) (not delivered|could not be delivered|undeliverable)|^undeliver|^returned mail|^non remis|^unzustellbar|^niet bezorgd|^nicht zustellbar`, FormatGeneric, false),
	sig(`(?i)delivery status notification|delivery (failure|failed)|failed delivery|mail (system error|failed|failure)|returned mail|undeliver|loop alert|errors from|are not member|メールエラー|配信エラー|送信エラー`, FormatGeneric, false),
}

var (
	// delayRe: text saying delivery is still being retried.
	delayRe = regexp.MustCompile(`(?i)has been delayed|still being retried|will (continue to )?(retry|try)|could not send message for past|message [^\n]* delayed|only a temporary failure|you do not need to re-?send|has not yet been delivered|continue to attempt delivery|delivery attempts will continue|this is just a warning|has been postponed`)
	// failStatusRe: an enhanced status code of class 4 or 5, not part of
	// a dotted number such as an IP address.
	failStatusRe = regexp.MustCompile(`(?:^|[^0-9.])([45]\.[0-9]{1,3}\.[0-9]{1,3})(?:[^0-9.]|\.[^0-9]|\.?$)`)
	// failCodeRe: a basic SMTP reply code of class 4 or 5 where bounce
	// texts put one.
	failCodeRe = regexp.MustCompile(`(?im)(?:^|said:|<<<|#|error:|reply:|\()[ \t]*([45][0-5][0-9])(?:[ \t\-:]|$)`)
	// quoteMarkerRe: the line before a quoted original message.
	quoteMarkerRe = regexp.MustCompile(`(?im)^[ \t]*-*[ \t]*(?:this is a copy of the message|below this line is a copy of the message|original message|unsent message below|undelivered message follows|message headers? follows?|returned message|original message headers|the headers of your message)[^\n]*$`)
	// headerStartRe: the first line of a quoted header when no marker says.
	headerStartRe = regexp.MustCompile(`(?m)^(?:Return-Path|Received|Message-I[Dd]|DKIM-Signature):`)
	// recipient lines in bounce texts: "<a@b>:" (qmail, Postfix, Yahoo),
	// or an address alone on its line (Exim, Gmail, Exchange).
	angleRcptRe = regexp.MustCompile(`(?m)^[ \t]*<([^<>\s@]+@[^<>\s]+)>:?`)
	bareRcptRe  = regexp.MustCompile(`(?m)^[ \t]*([^\s<>@:"]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,})[ \t]*:?[ \t]*\r?$`)
)

// classifyTextBounce recognises a non-standard bounce: an MTA's text, or a
// bounce subject from a daemon sender, or a daemon sender returning the
// original with an error in the text. Severity comes from the first 4xx/5xx
// code, then phrases (full mailbox soft, unknown user hard), then the
// subject (a failure subject is hard, anything else soft).
func classifyTextBounce(m *message) (Report, bool) {
	subject := m.subject()
	text := m.text()
	head, quoted := splitQuoted(text)
	bsig := firstMatch(bodySignatures, head)
	ssig := firstMatch(subjectSignatures, subject)
	daemon := isDaemon(m.root.header)
	null := daemonEnvelope(m.root.header)
	var quotedHdr header
	if len(m.originals) == 0 && quoted != "" {
		quotedHdr, _, _ = parseHeader([]byte(strings.TrimLeft(quoted, " \t\r\n")), true)
	}
	hasOrig := len(m.originals) > 0 || len(quotedHdr) > 0
	status := submatch(failStatusRe, head)
	code := submatch(failCodeRe, head)
	evidence := status != "" || code != "" || hardRe.MatchString(head) || quotaRe.MatchString(head)
	switch {
	case bsig != nil:
	case ssig != nil && (daemon || hasOrig || null):
	case daemon && (hasOrig || evidence):
	default:
		return Report{}, false
	}
	if len(quotedHdr) > 0 {
		m.originals = append(m.originals, quotedHdr)
	}
	rep := Report{Kind: KindBounce, Status: status, Action: "failed", Format: FormatGeneric}
	delay := delayRe.MatchString(head)
	for _, s := range []*signature{bsig, ssig} {
		if s != nil {
			delay = delay || s.delay
			if rep.Format == FormatGeneric {
				rep.Format = s.format
			}
		}
	}
	if rep.Format == FormatQmail && strings.Contains(strings.ToLower(m.root.header.get("From")), "yahoo") {
		rep.Format = FormatYahoo
	}
	rep.Recipient = bounceRecipient(m.root.header, head)
	line := diagnosticLine(head, status, code)
	rep.Diagnostic = line
	if rep.Diagnostic == "" {
		rep.Diagnostic = subject
	}
	if delay {
		rep.Action = "delayed"
	}
	codeN, _ := strconv.Atoi(code)
	// The subject stands in for a missing diagnostic line in the report,
	// but it is only context to the judgement ("Returned mail: Service
	// unavailable" says less than the text below it).
	judge(&rep, bounce.Failure{Status: status, Code: codeN, Text: line, Context: head + "\n" + subject,
		Delayed: delay, Final: !delay})
	return rep, true
}

// firstMatch returns the first signature matching s, or nil.
func firstMatch(sigs []signature, s string) *signature {
	for i := range sigs {
		if sigs[i].re.MatchString(s) {
			return &sigs[i]
		}
	}
	return nil
}

// submatch returns the first capture group of re's first match in s.
func submatch(re *regexp.Regexp, s string) string {
	if mm := re.FindStringSubmatch(s); mm != nil {
		return mm[1]
	}
	return ""
}

// splitQuoted cuts bounce text at the quoted original: after a marker line
// ("This is a copy of the message", "Original message", ...), or else at
// the first line that starts a message header.
func splitQuoted(text string) (head, quoted string) {
	if loc := quoteMarkerRe.FindStringIndex(text); loc != nil {
		return text[:loc[0]], text[loc[1]:]
	}
	if loc := headerStartRe.FindStringIndex(text); loc != nil {
		return text[:loc[0]], text[loc[0]:]
	}
	return text, ""
}

// isDaemon reports whether the From header is a mail system's.
func isDaemon(h header) bool {
	from := strings.ToLower(decodeHeader(capped(h.get("From"), 998)))
	for _, s := range []string{"mailer-daemon", "mailer_daemon", "mailerdaemon", "mail-daemon",
		"postmaster", "post_master", "mdaemon@", "mail delivery", "mail.delivery", "microsoftexchange", "mail administrator"} {
		if strings.Contains(from, s) {
			return true
		}
	}
	return false
}

// daemonEnvelope reports whether the envelope sender (Return-Path) is
// null or a mail system's MAILER-DAEMON: a report, not a person's mail.
func daemonEnvelope(h header) bool {
	rp := strings.ToLower(strings.TrimSpace(capped(h.get("Return-Path"), 998)))
	return rp == "<>" || strings.Contains(rp, "mailer-daemon@")
}

// bounceRecipient returns the failed address: X-Failed-Recipients (Exim,
// Gmail), else the first recipient line of the bounce text.
func bounceRecipient(h header, head string) string {
	if v := h.get("X-Failed-Recipients"); v != "" {
		v, _, _ = strings.Cut(v, ",")
		return v
	}
	if s := submatch(angleRcptRe, head); s != "" {
		return s
	}
	return submatch(bareRcptRe, head)
}

// detailRe: phrases that describe a failure without deciding its severity.
var detailRe = regexp.MustCompile(`(?i)timed out|connection refused|temporary|temporarily|rejected|refused|blocked|denied|not accept`)

// diagnosticLine returns the line of the bounce text that holds the status
// or code, else the first line with a telling phrase.
func diagnosticLine(head, status, code string) string {
	idx := -1
	switch {
	case status != "":
		idx = strings.Index(head, status)
	case code != "":
		if loc := failCodeRe.FindStringSubmatchIndex(head); loc != nil {
			idx = loc[2]
		}
	}
	for _, re := range []*regexp.Regexp{hardRe, quotaRe, detailRe} {
		if idx >= 0 {
			break
		}
		if loc := re.FindStringIndex(head); loc != nil {
			idx = loc[0]
		}
	}
	if idx < 0 {
		return ""
	}
	start := strings.LastIndexByte(head[:idx], '\n') + 1
	end := strings.IndexByte(head[idx:], '\n')
	if end < 0 {
		end = len(head) - idx
	}
	// A line that is little more than the status ("(#5.5.0)", qmail)
	// ends the reply on the line before it: take both.
	if len(strings.TrimSpace(head[start:idx+end])) < 16 && start > 0 {
		start = strings.LastIndexByte(head[:start-1], '\n') + 1
	}
	return head[start : idx+end]
}

// tagRe matches an HTML tag or comment, blockRe the tags that end a line;
// stripTags is only for finding phrases and codes in HTML-only bounces.
var (
	tagRe   = regexp.MustCompile(`(?s)<!--.*?-->|<[^>]*>`)
	blockRe = regexp.MustCompile(`(?i)<(br|/p|/div|/tr|/li|/h[1-6])[^>]*>`)
)

// stripTags returns the text of an HTML fragment, one block per line.
func stripTags(s string) string {
	s = blockRe.ReplaceAllString(s, "\n")
	return html.UnescapeString(tagRe.ReplaceAllString(s, ""))
}
