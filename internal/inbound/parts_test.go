package inbound

import (
	"github.com/feedmail/feedmail/internal/bounce"
	"slices"
	"strings"
	"testing"
)

func TestTokens(t *testing.T) {
	outer := header{
		{"To", "Reader <bounces+TO1@mail.example.org>, bounces+TO2@MAIL.EXAMPLE.ORG"},
		{"Cc", "bounces+CC@mail.example.org"},
		{"Delivered-To", "BOUNCES+DT@mail.example.org"},
		{"X-Original-To", "bounces+DT@mail.example.org"},
		{"From", "bounces+FROM@mail.example.org"},
	}
	orig := []header{{
		{"Return-Path", "<bounces+RP@mail.example.org>"},
		{"List-Unsubscribe", "<https://x.example/u>, <mailto:bounces%2BLU@mail.example.org?subject=unsubscribe>"},
		{"To", "bounces+ORIGTO@mail.example.org"},
	}}
	tests := []struct {
		name       string
		bounce     string
		recipients []string
		outer      header
		orig       []header
		want       []string
	}{
		{"trust order", "bounces@mail.example.org", []string{"<bounces+ENV@mail.example.org>", "bounces+TO1@mail.example.org"},
			outer, orig, []string{"ENV", "TO1", "DT", "TO2", "CC", "RP", "LU"}},
		{"no bounce address", "", []string{"bounces+ENV@mail.example.org"}, outer, orig, nil},
		{"malformed bounce address", "bounces", nil, outer, orig, nil},
		{"plus in the configured address", "bounces+x@mail.example.org", nil, header{{"To", "bounces+A@mail.example.org"}}, nil, []string{"A"}},
		{"longer local part", "bounces@mail.example.org", []string{"my-bounces+A@mail.example.org", "x.bounces+B@mail.example.org"}, nil, nil, nil},
		{"longer domain", "bounces@mail.example.org", []string{"bounces+A@mail.example.org.evil.test", "bounces+B@mail.example.organic"}, nil, nil, nil},
		{"subdomain of ours", "bounces@example.org", []string{"bounces+A@mail.example.org"}, nil, nil, nil},
		{"sentence end", "bounces@mail.example.org", []string{"write to bounces+A@mail.example.org."}, nil, nil, []string{"A"}},
		{"empty token", "bounces@mail.example.org", []string{"bounces+@mail.example.org"}, nil, nil, nil},
		{"adjacent", "bounces@mail.example.org", []string{"bounces+A@mail.example.org,bounces+B@mail.example.org"}, nil, nil, []string{"A", "B"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := newTokenFinder(tt.bounce).collect(tt.recipients, tt.outer, tt.orig)
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTokensCapped(t *testing.T) {
	var b strings.Builder
	for i := range 1000 {
		b.WriteString("bounces+T" + strings.Repeat("x", i) + "@mail.example.org, ")
	}
	got := newTokenFinder("bounces@mail.example.org").collect(nil, header{{"To", b.String()}}, nil)
	if len(got) != maxListed {
		t.Errorf("%d tokens, want the cap %d", len(got), maxListed)
	}
}

func TestSplitMultipart(t *testing.T) {
	tests := []struct {
		name, body string
		want       []string
	}{
		{"plain", "pre\n--b\nA\n--b\r\nB\r\n--b--\nepilogue", []string{"A", "B"}},
		{"transport padding", "--b  \nA\n--b-- \n", []string{"A"}},
		{"truncated", "--b\nA\n--b\nB is cut", []string{"A", "B is cut"}},
		{"longer boundary is not ours", "--b\nA\n--bc\nstill A\n--b--", []string{"A\n--bc\nstill A"}},
		{"not at line start", "--b\nx --b\n--b--", []string{"x --b"}},
		{"no delimiter", "just text", nil},
		{"empty parts", "--b\n--b\n--b--", []string{"", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, p := range splitMultipart([]byte(tt.body), "b", 100) {
				got = append(got, string(p))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	if got := splitMultipart([]byte("--b\nA\n--b\nB\n--b\nC"), "b", 2); len(got) != 2 {
		t.Errorf("limit 2: got %d parts", len(got))
	}
}

func TestParseContentType(t *testing.T) {
	tests := []struct {
		in, mt, boundary string
	}{
		{`multipart/report; report-type=delivery-status; boundary="a b"`, "multipart/report", "a b"},
		{`Multipart/Mixed; boundary=----=_Part_123`, "multipart/mixed", "----=_Part_123"},
		{`multipart/mixed; boundary="abc`, "multipart/mixed", "abc"},
		{`multipart/mixed; boundary=abc; boundary=def`, "multipart/mixed", "abc"},
		{`multipart/mixed; charset; boundary=x`, "multipart/mixed", "x"},
		{`garbage`, "text/plain", ""},
		{`text/plain; charset="utf-8`, "text/plain", ""},
	}
	for _, tt := range tests {
		mt, params := parseContentType(tt.in)
		if mt != tt.mt || params["boundary"] != tt.boundary {
			t.Errorf("parseContentType(%q) = %q %q, want %q %q", tt.in, mt, params, tt.mt, tt.boundary)
		}
	}
}

func TestParseHeader(t *testing.T) {
	in := "From x\r\nSubject: a\r\n  b\r\n\tc\r\nX-Empty:\r\nTo : y\r\n\r\nbody"
	h, body, ok := parseHeader([]byte(in), true)
	if !ok || string(body) != "body" {
		t.Fatalf("ok=%v body=%q", ok, body)
	}
	want := header{{"Subject", "a b c"}, {"X-Empty", ""}, {"To", "y"}}
	if !slices.Equal(h, want) {
		t.Errorf("got %q, want %q", h, want)
	}
	if _, _, ok := parseHeader([]byte("no colon here\n\n"), false); ok {
		t.Error("a line without a colon parsed as a header")
	}
	h, body, _ = parseHeader([]byte("A: 1\nnot a field\nB: 2"), false)
	if len(h) != 1 || string(body) != "not a field\nB: 2" {
		t.Errorf("header ends at a non-field line: got %q, body %q", h, body)
	}
}

func TestClip(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{" a\r\n  b\tc ", 10, "a b c"},
		{"abc def", 4, "abc"},
		{"abc def", 5, "abc d"},
		{"äöü\x00ß", 3, "äöü"},
		{"\xff x", 3, "\uFFFD x"},
	}
	for _, tt := range tests {
		if got := clip(tt.in, tt.n); got != tt.want {
			t.Errorf("clip(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

func TestDiagnosticValue(t *testing.T) {
	tests := []struct{ in, want string }{
		{"smtp; 550 5.1.1 user unknown", "550 5.1.1 user unknown"},
		{"X-Postfix; connect to x: timed out", "connect to x: timed out"},
		{"550-5.1.1 first 550-5.1.1 second 550 5.1.1 third", "550-5.1.1 first second third"},
		{"550 Mailbox 400 full", "550 Mailbox 400 full"},
		{"no type <a@b; c>", "no type <a@b; c>"},
	}
	for _, tt := range tests {
		if got := diagnosticValue(tt.in); got != tt.want {
			t.Errorf("diagnosticValue(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestDSNSeverity covers the per-recipient rules: the cause decides the
// severity, the class of the code alone never does.
func TestDSNSeverity(t *testing.T) {
	tests := []struct {
		name, fields, human string
		kind                Kind
		cause               bounce.Reason
		severity            Severity
	}{
		{"failed 5.1.1", "Action: failed\nStatus: 5.1.1", "", KindBounce, bounce.UnknownUser, SeverityHard},
		{"failed 5.2.2", "Action: failed\nStatus: 5.2.2", "", KindBounce, bounce.MailboxFull, SeveritySoft},
		{"failed quota text", "Action: failed\nStatus: 5.7.1\nDiagnostic-Code: smtp; 552 user is over quota", "", KindBounce, bounce.MailboxFull, SeveritySoft},
		{"failed 4.4.7 (given up)", "Action: failed\nStatus: 4.4.7", "", KindBounce, bounce.Expired, SeverityNone},
		{"failed without status", "Action: failed", "", KindBounce, bounce.Undetermined, SeverityNone},
		{"failed, code in diagnostic", "Action: failed\nDiagnostic-Code: smtp; 452 insufficient storage", "", KindBounce, bounce.MailboxFull, SeveritySoft},
		{"failed 5.7.1 blocklist", "Action: failed\nStatus: 5.7.1\nDiagnostic-Code: smtp; 554 5.7.1 Service unavailable; Client host [192.0.2.1] blocked using zen.spamhaus.org", "", KindBounce, bounce.Blocked, SeverityNone},
		{"failed 5.7.26 DMARC", "Action: failed\nStatus: 5.7.26\nDiagnostic-Code: smtp; 550 5.7.26 Unauthenticated email is not accepted", "", KindBounce, bounce.Authentication, SeverityNone},
		{"failed 5.0.0, cause in the human part", "Action: failed\nStatus: 5.0.0", "<a@b.example>: host mx said: 550 No such user here", KindBounce, bounce.UnknownUser, SeverityHard},
		{"delayed", "Action: delayed\nStatus: 4.4.1", "", KindBounce, bounce.Temporary, SeverityNone},
		{"delayed with a 5 status", "Action: delayed\nStatus: 5.0.0", "", KindBounce, bounce.Undetermined, SeverityNone},
		{"delayed unknown user", "Action: delayed\nStatus: 4.1.1", "", KindBounce, bounce.UnknownUser, SeveritySoft},
		{"delivered", "Action: delivered\nStatus: 2.0.0", "", KindUnknown, "", SeverityNone},
		{"relayed", "Action: relayed (to a non-DSN MTA)\nStatus: 2.0.0", "", KindUnknown, "", SeverityNone},
		{"expanded", "Action: Expanded", "", KindUnknown, "", SeverityNone},
		{"no action, 5.x.x", "Status: 5.1.2", "", KindBounce, bounce.UnknownDomain, SeverityHard},
		{"no action, 2.x.x", "Status: 2.1.5", "", KindUnknown, "", SeverityNone},
		{"nothing tells", "Final-Recipient: rfc822; a@b", "", KindBounce, bounce.Undetermined, SeverityNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, _, ok := parseHeader([]byte(tt.fields+"\n"), false)
			if !ok {
				t.Fatal("fields did not parse")
			}
			got := dsnRecipient(h, tt.human)
			if got.Kind != tt.kind || got.Cause != tt.cause || got.Severity != tt.severity {
				t.Errorf("got %q %q %q, want %q %q %q", got.Kind, got.Cause, got.Severity, tt.kind, tt.cause, tt.severity)
			}
		})
	}
}

// TestMostSevereRecipient: of several recipients the failed one is
// reported.
func TestMostSevereRecipient(t *testing.T) {
	msg := "From: MAILER-DAEMON@x\nContent-Type: multipart/report; report-type=delivery-status; boundary=B\n\n" +
		"--B\nContent-Type: message/delivery-status\n\nReporting-MTA: dns; x\n\n" +
		"Final-Recipient: rfc822; ok@example.com\nAction: delivered\nStatus: 2.0.0\n\n" +
		"Final-Recipient: rfc822; later@example.com\nAction: delayed\nStatus: 4.2.0\n\n" +
		"Final-Recipient: rfc822; dead@example.com\nAction: failed\nStatus: 5.1.1\n\n--B--\n"
	got, err := Parse(strings.NewReader(msg), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Recipient != "dead@example.com" || got.Severity != SeverityHard {
		t.Errorf("got %+v, want the failed recipient", got)
	}
}

func TestTextBounceSeverity(t *testing.T) {
	base := "From: MAILER-DAEMON@mx.example.net\nSubject: %s\n\n%s\n"
	tests := []struct {
		name, subject, body string
		kind                Kind
		cause               bounce.Reason
		severity            Severity
	}{
		{"enhanced 5", "Returned mail: User unknown", "<a@b.example>... 550 5.1.1 gone", KindBounce, bounce.UnknownUser, SeverityHard},
		{"enhanced 4", "Returned mail: see transcript", "<<< 451 4.7.1 try later", KindBounce, bounce.Temporary, SeverityNone},
		{"basic 5 says nothing", "Mail delivery failed", "remote said: 550 nope", KindBounce, bounce.Undetermined, SeverityNone},
		{"basic 4", "Mail delivery failed", "remote said: 421 busy", KindBounce, bounce.Temporary, SeverityNone},
		{"mailbox full phrase", "failure notice", "<a@b.example>:\nThe mailbox is full.", KindBounce, bounce.MailboxFull, SeveritySoft},
		{"user unknown phrase", "failure notice", "<a@b.example>:\nuser unknown", KindBounce, bounce.UnknownUser, SeverityHard},
		{"blocklisted sender", "Mail delivery failed", "remote said: 550 5.7.1 rejected because 192.0.2.1 is listed at bl.spamcop.net", KindBounce, bounce.Blocked, SeverityNone},
		{"connection timed out, given up", "failure notice", "<a@b.example>:\nconnect to mx: Connection timed out. Giving up.", KindBounce, bounce.Expired, SeverityNone},
		{"IP address is no status", "Delivery Notification", "host 10.5.1.1 refused", KindBounce, bounce.Undetermined, SeverityNone},
		{"nothing, failure subject", "Undeliverable: hello", "something went wrong", KindBounce, bounce.Undetermined, SeverityNone},
		{"delay subject", "Delivery Status Notification (Delay)", "550 5.1.1 would be hard", KindBounce, bounce.UnknownUser, SeveritySoft},
		{"daemon without a bounce subject", "Hello", "How are you?", KindUnknown, "", SeverityNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := strings.Replace(strings.Replace(base, "%s", tt.subject, 1), "%s", tt.body, 1)
			got, err := Parse(strings.NewReader(msg), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Kind != tt.kind || got.Cause != tt.cause || got.Severity != tt.severity {
				t.Errorf("got %q %q %q (%+v), want %q %q %q", got.Kind, got.Cause, got.Severity, got, tt.kind, tt.cause, tt.severity)
			}
		})
	}
}

func TestAutoReply(t *testing.T) {
	tests := []struct {
		name, header string
		kind         Kind
	}{
		{"auto-replied", "Auto-Submitted: auto-replied (vacation)", KindAutoReply},
		{"auto-submitted no", "Auto-Submitted: no\nSubject: hello", KindUnknown},
		{"precedence", "Precedence: auto_reply", KindAutoReply},
		{"precedence bulk", "Precedence: bulk", KindUnknown},
		{"x-autorespond", "X-Autorespond: 1", KindAutoReply},
		{"suppress is a request", "X-Auto-Response-Suppress: All", KindUnknown},
		{"out of office", "Subject: Out of Office: Re: news", KindAutoReply},
		{"auto:", "Subject: AUTO: Jane is away", KindAutoReply},
		{"abwesenheitsnotiz", "Subject: Abwesenheitsnotiz: Neue Artikel", KindAutoReply},
		{"encoded", "Subject: =?ISO-8859-1?Q?R=E9ponse_automatique?=", KindAutoReply},
		{"ordinary", "Subject: Re: your newsletter", KindUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(strings.NewReader("From: a@example.com\n"+tt.header+"\n\nbody\n"), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Kind != tt.kind {
				t.Errorf("got %q, want %q", got.Kind, tt.kind)
			}
		})
	}
}

// TestGatewayWordings: the failure notices of gateways that send from an
// ordinary address (MDaemon, InterScan, Symantec, a moderation system) or
// from a MAILER-DAEMON envelope are recognised by their own sentences and
// subjects; a delay among them never counts hard. A person's mail that
// quotes none of them stays unknown.
func TestGatewayWordings(t *testing.T) {
	tests := []struct {
		name, header, body string
		kind               Kind
		action             string
	}{
		{"MDaemon permanent", "From: MDaemon@mx.example.net\nSubject: Permanent Delivery Failure",
			"The attached message had PERMANENT fatal delivery errors!", KindBounce, "failed"},
		{"MDaemon user unknown", "From: MDaemon@mx.example.net\nSubject: Warning: a@b.example - User unknown!",
			"a@b.example - no such user here.", KindBounce, "failed"},
		{"InterScan by its envelope", "Return-Path: <MAILER-DAEMON@relay.example.net>\nFrom: imss@b.example\nSubject: Mail could not be delivered",
			"Sent <<< RCPT TO:<a@b.example>\nReceived >>> 550 5.1.1 unknown user.", KindBounce, "failed"},
		{"moderation notice", "From: admin@b.example\nSubject: Non-Delivery: Your message awaits moderator approval",
			"--- Non-Delivery Report ---\nThe email below could not be delivered to the following user:\n\"a\" <a@b.example>", KindBounce, "failed"},
		{"bilingual", "From: gw@b.example\nSubject: RE: hello : non remis (delivery failed)",
			"Your message could not be delivered to\na@b.example\n", KindBounce, "failed"},
		{"system administrator", "From: \"System Administrator\"@b.example\nSubject: Delivery Failure",
			"Could not deliver message to the following recipient(s):\nFailed Recipient: a@b.example\nReason: Remote host said: 550 unknown user", KindBounce, "failed"},
		{"returned for an error", "From: MAILER-DAEMON@b.example\nSubject: Processing Error",
			"Intended recipient: a@b.example\nThe following mail has been returned because it encountered an error", KindBounce, "failed"},
		{"failed mail subject", "From: postmaster@b.example (Automated response)\nSubject: FAILED MAIL to \"a\"",
			"The address to which your message was addressed did not match.", KindBounce, "failed"},
		{"Sina", "From: MAILER-DAEMON@sina.example\nSubject: x\nContent-Type: text/plain; charset=utf-8",
			"邮件无法发送到您指定的地址中。\n<a@b.example>:", KindBounce, "failed"},
		{"automated, not yet delivered", "From: MAILER-DAEMON@b.example (Mail Delivery System)\nSubject: Warning: message has not yet been delivered",
			"This is an automated message created by mail delivery software.\nYour message to:\n\ta@b.example\nhas not yet been delivered. This is just a warning.", KindBounce, "delayed"},
		{"Symantec, attempts continue", "From: gw@b.example\nSubject: Delivery failure notification",
			"could not be delivered to the following recipients:\na@b.example\nDelivery attempts will continue to be made for 5 day(s).", KindBounce, "delayed"},
		{"postponed, mailbox full", "From: <Postmaster@b.example>\nSubject: Mail Delivery Warning",
			"Delivery of email to this address has been postponed due to a full mailbox.", KindBounce, "delayed"},
		{"a person's mail", "From: friend@b.example\nSubject: lunch?",
			"Your message has been read. Could we meet at noon?", KindUnknown, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(strings.NewReader(tt.header+"\n\n"+tt.body+"\n"), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Kind != tt.kind || got.Action != tt.action || got.Action == "delayed" && got.Severity == SeverityHard {
				t.Errorf("got %q %q %q (%+v), want %q %q, never hard when delayed", got.Kind, got.Action, got.Severity, got, tt.kind, tt.action)
			}
		})
	}
}
