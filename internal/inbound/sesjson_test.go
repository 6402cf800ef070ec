package inbound

import (
	"encoding/json"
	"mime/quotedprintable"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/feedmail/feedmail/internal/bounce"
)

// sesJSON reads one of package esp's SES samples (the same documented
// notifications POST /webhooks/ses is tested with).
func sesJSON(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("../esp/testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// snsEnvelope wraps message as SNS sends it to an email-json subscription.
func snsEnvelope(t *testing.T, message string) string {
	t.Helper()
	b, err := json.MarshalIndent(map[string]string{
		"Type": "Notification", "MessageId": "5b2a2b5c-8e6a-5d8b-a6b9-0b7c1f3e2d1a",
		"TopicArn": "arn:aws:sns:us-east-1:123456789012:feedmail-ses", "Message": message,
		"Timestamp": "2026-11-23T07:59:38.300Z", "SignatureVersion": "1", "Signature": "EXAMPLEpH+DcEwjAPg8O9mY8dReBSwksfg2S7WKQcikcNKWLQjwu6A4VbeS0QHVCkhRS7fUQvi2egU3N858fiTDN6bkkOxYDVrY0Ad8L10Hs3zH81mtnPk5uvvolIC1CXGu43obcgFxeL3khZl8IKvO61GWB6jI9b5+gLPoBc1Q=",
		"SigningCertURL": "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-f3ecfb7224c7233fe7bb5f59f96de52f.pem",
		"UnsubscribeURL": "https://sns.us-east-1.amazonaws.com/?Action=Unsubscribe&SubscriptionArn=arn:aws:sns:us-east-1:123456789012:feedmail-ses:1"},
		"", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// snsMail is the email an SNS email(-json) subscription sends.
func snsMail(body, cte string) string {
	return "From: AWS Notifications <no-reply@sns.amazonaws.com>\r\n" +
		"To: postmaster@mail.feedmail.test\r\n" +
		"Subject: AWS Notification Message\r\n" +
		"Message-ID: <0100018c-sns-example@email.amazonses.com>\r\n" +
		"MIME-Version: 1.0\r\n" +
		"Content-Type: text/plain; charset=UTF-8\r\n" +
		"Content-Transfer-Encoding: " + cte + "\r\n\r\n" + body
}

func qp(s string) string {
	var b strings.Builder
	w := quotedprintable.NewWriter(&b)
	_, _ = w.Write([]byte(s))
	_ = w.Close()
	return b.String()
}

// TestSESJSONByMail: SES's JSON arriving by mail (an SNS email-json
// subscription, quoted-printable or not; the "email" protocol's bare SES
// JSON with SNS's footer; a forwarded copy) is a bounce judged by cause,
// or a complaint, naming the email by its Message-ID and the return token
// of its envelope sender; a delivery notification is no report; prose
// that merely mentions the field names is not SES's JSON.
func TestSESJSONByMail(t *testing.T) {
	hard := sesJSON(t, "ses-bounce-permanent.json")
	footer := "\n\n--\nIf you wish to stop receiving notifications from this topic, please click or visit the link below to unsubscribe:\nhttps://sns.us-east-1.amazonaws.com/unsubscribe.html?SubscriptionArn=x\n"
	cases := []struct {
		name, msg string
		kind      Kind
		severity  Severity
		cause     bounce.Reason
		party     bounce.Party
		token     bool
	}{
		{"email-json", snsMail(snsEnvelope(t, hard), "7bit"), KindBounce, SeverityHard, bounce.UnknownUser, bounce.PartyReader, true},
		{"email-json quoted-printable", snsMail(qp(snsEnvelope(t, hard)), "quoted-printable"), KindBounce, SeverityHard, bounce.UnknownUser, bounce.PartyReader, true},
		{"email protocol with footer", snsMail(hard+footer, "7bit"), KindBounce, SeverityHard, bounce.UnknownUser, bounce.PartyReader, true},
		{"lines wrapped by a mail system", snsMail(wrap76(snsEnvelope(t, hard)), "7bit"), KindBounce, SeverityHard, bounce.UnknownUser, bounce.PartyReader, true},
		{"forwarded", snsMail("---------- Forwarded message ---------\nFrom: AWS Notifications\n\n"+hard, "8bit"), KindBounce, SeverityHard, bounce.UnknownUser, bounce.PartyReader, true},
		{"blocked by a blocklist", snsMail(snsEnvelope(t, sesJSON(t, "ses-bounce-blocked.json")), "7bit"), KindBounce, SeverityNone, bounce.Blocked, bounce.PartySender, false},
		{"mailbox full", snsMail(snsEnvelope(t, sesJSON(t, "ses-bounce-transient.json")), "7bit"), KindBounce, SeveritySoft, bounce.MailboxFull, bounce.PartyReader, false},
		{"complaint", snsMail(snsEnvelope(t, sesJSON(t, "ses-complaint.json")), "7bit"), KindComplaint, SeverityNone, "", "", false},
		{"delivery", snsMail(snsEnvelope(t, sesJSON(t, "ses-delivery.json")), "7bit"), KindUnknown, SeverityNone, "", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep, err := Parse(strings.NewReader(c.msg), Options{BounceAddress: "bounces@mail.feedmail.test"})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Kind != c.kind || rep.Severity != c.severity || rep.Cause != c.cause || rep.Party != c.party || rep.Format != FormatSESJSON {
				t.Fatalf("%+v", rep)
			}
			if !slices.Contains(rep.OriginalMessageIDs, "item-12-34.ABCDEFGHIJKLMNOP@feedmail.test") {
				t.Errorf("Message-IDs %q", rep.OriginalMessageIDs)
			}
			if got := slices.Contains(rep.Tokens, "RETURNTOKEN"); got != c.token {
				t.Errorf("tokens %q", rep.Tokens)
			}
		})
	}
	for name, msg := range map[string]string{
		"prose":          snsMail(`Set "notificationType" and "eventType" in the configuration set.`, "7bit"),
		"other JSON":     snsMail(`{"notificationType": 5}`, "7bit"),
		"empty JSON":     snsMail(`{"eventType": ""}`, "7bit"),
		"broken":         snsMail(`{"notificationType":"Bounce","bounce":{`, "7bit"),
		"other SNS JSON": snsMail(snsEnvelope(t, "hello"), "7bit"),
	} {
		rep, err := Parse(strings.NewReader(msg), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Format == FormatSESJSON || rep.Kind == KindBounce || rep.Kind == KindComplaint {
			t.Errorf("%s: %+v", name, rep)
		}
	}
}

// wrap76 breaks s into lines of 76 characters, as some mail systems do to
// long lines (inside JSON strings too).
func wrap76(s string) string {
	var b strings.Builder
	for len(s) > 76 {
		b.WriteString(s[:76] + "\n")
		s = s[76:]
	}
	b.WriteString(s)
	return b.String()
}
