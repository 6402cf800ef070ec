package esp

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/bounce"
	"github.com/feedmail/feedmail/internal/testkit/esptest"
)

// ourID is the Message-ID every sample names, as feedmail writes them.
const ourID = "item-12-34.ABCDEFGHIJKLMNOP@feedmail.test"

var now = time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)

var opt = Options{BounceAddress: "bounces@mail.feedmail.test"}

func sample(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// want is what one notice should be, judged.
type want struct {
	kind     Kind
	reason   bounce.Reason
	severity bounce.Severity
	status   string
	delayed  bool
}

func check(t *testing.T, name string, b Batch, ignored int, wants ...want) {
	t.Helper()
	if len(b.Notices) != len(wants) || b.Ignored != ignored {
		t.Fatalf("%s: %d notices, %d ignored (%+v); want %d and %d", name, len(b.Notices), b.Ignored, b.Notices, len(wants), ignored)
	}
	for i, w := range wants {
		n := b.Notices[i]
		v := bounce.Judge(n.Failure)
		if n.Kind != KindBounce {
			v = bounce.Verdict{}
		}
		got := want{n.Kind, v.Reason, v.Severity, n.Failure.Status, n.Failure.Delayed}
		if got != w {
			t.Errorf("%s notice %d (%s): %+v, want %+v (failure %+v)", name, i, n.Event, got, w, n.Failure)
		}
		if !slices.Contains(n.MessageIDs, ourID) {
			t.Errorf("%s notice %d: Message-IDs %q lack ours", name, i, n.MessageIDs)
		}
	}
}

// TestSESSamples reads SES's documented notification samples: a hard
// bounce, a bounce for a blocklisted sending IP (the sender's problem,
// whatever SES's bounce type), a full mailbox, a complaint, a delivery
// delay (event publishing) and a delivery (ignored).
func TestSESSamples(t *testing.T) {
	cases := []struct {
		file    string
		ignored int
		wants   []want
	}{
		{"ses-bounce-permanent.json", 0, []want{{KindBounce, bounce.UnknownUser, bounce.Hard, "5.1.1", false}}},
		{"ses-bounce-blocked.json", 0, []want{{KindBounce, bounce.Blocked, bounce.None, "5.7.1", false}}},
		{"ses-bounce-transient.json", 0, []want{{KindBounce, bounce.MailboxFull, bounce.Soft, "", false}}},
		{"ses-complaint.json", 0, []want{{kind: KindComplaint}}},
		{"ses-event-delay.json", 0, []want{{KindBounce, bounce.Temporary, bounce.None, "4.4.1", true}}},
		{"ses-delivery.json", 1, nil},
	}
	for _, c := range cases {
		b, err := ParseSES(sample(t, c.file), opt)
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		check(t, c.file, b, c.ignored, c.wants...)
	}
	b, _ := ParseSES(sample(t, "ses-bounce-permanent.json"), opt)
	if n := b.Notices[0]; !slices.Equal(n.Tokens, []string{"RETURNTOKEN"}) || n.Recipient != "jane@example.com" ||
		n.Failure.Code != 550 || n.Event != "Bounce Permanent/General" {
		t.Errorf("hard bounce: %+v", n)
	}
	// A bounce SES could not place still names a dead address in its words.
	b, _ = ParseSES([]byte(`{"notificationType":"Bounce","bounce":{"bounceType":"Permanent","bounceSubType":"General",
		"bouncedRecipients":[{"emailAddress":"x@example.com"}]},"mail":{"commonHeaders":{"messageId":"<`+ourID+`>"}}}`), opt)
	check(t, "bare permanent", b, 0, want{KindBounce, bounce.NotAccepting, bounce.Hard, "", false})
	for _, bad := range []string{``, `[]`, `{"mail":{}}`, `{"notificationType":`, `not json`} {
		if _, err := ParseSES([]byte(bad), opt); !errors.Is(err, ErrMalformed) {
			t.Errorf("%q: %v, want ErrMalformed", bad, err)
		}
	}
}

// certs is a CertSource of fixed certificates.
type certs map[string]*x509.Certificate

func (c certs) Certificate(_ context.Context, u string) (*x509.Certificate, error) {
	if x, ok := c[u]; ok {
		return x, nil
	}
	return nil, errors.New("no certificate there")
}

// TestSNSVerify signs SNS messages with a key the test made and checks
// that only genuine ones for a configured topic, signed within the hour
// under a certificate from an SNS host, pass.
func TestSNSVerify(t *testing.T) {
	sns := esptest.NewSNS(t, now)
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	v := &SNSVerifier{Topics: []string{esptest.Topic}, Host: sns.Host, Certs: certs{sns.CertURL(): sns.Cert}}
	ses := string(sample(t, "ses-bounce-permanent.json"))
	cases := []struct {
		name string
		msg  func() *esptest.Message
		at   time.Time
		err  error
	}{
		{"version 1", func() *esptest.Message { return sns.Notification(ses, now, "1") }, now, nil},
		{"version 2", func() *esptest.Message { return sns.Notification(ses, now, "2") }, now, nil},
		{"with a subject", func() *esptest.Message {
			m := sns.Notification(ses, now, "2")
			m.Subject, m.HasSubject = "Amazon SES Email Event Notification", true
			sns.Sign(m)
			return m
		}, now, nil},
		{"with an empty subject", func() *esptest.Message {
			m := sns.Notification(ses, now, "1")
			m.HasSubject = true
			sns.Sign(m)
			return m
		}, now, nil},
		{"subscription confirmation", func() *esptest.Message { return sns.SubscriptionConfirmation(now) }, now, nil},
		{"59 minutes old", func() *esptest.Message { return sns.Notification(ses, now.Add(-59*time.Minute), "2") }, now, nil},
		{"61 minutes old", func() *esptest.Message { return sns.Notification(ses, now.Add(-61*time.Minute), "2") }, now, ErrStale},
		{"from the future", func() *esptest.Message { return sns.Notification(ses, now.Add(6*time.Minute), "2") }, now, ErrStale},
		{"another topic", func() *esptest.Message {
			m := sns.Notification(ses, now, "2")
			m.TopicArn = "arn:aws:sns:us-east-1:123456789012:someone-else"
			sns.Sign(m)
			return m
		}, now, ErrForged},
		{"message altered", func() *esptest.Message {
			m := sns.Notification(ses, now, "2")
			m.Message = strings.Replace(m.Message, "5.1.1", "5.1.2", 1)
			return m
		}, now, ErrForged},
		{"subject added after signing", func() *esptest.Message {
			m := sns.Notification(ses, now, "2")
			m.Subject, m.HasSubject = "x", true
			return m
		}, now, ErrForged},
		{"signed with another key", func() *esptest.Message {
			m := sns.Notification(ses, now, "2")
			m.Signature = esptest.SignSNS(other, m)
			return m
		}, now, ErrForged},
		{"version 1 signature claimed as 2", func() *esptest.Message {
			m := sns.Notification(ses, now, "1")
			m.SignatureVersion = "2"
			return m
		}, now, ErrForged},
		{"unknown version", func() *esptest.Message {
			m := sns.Notification(ses, now, "2")
			m.SignatureVersion = "3"
			return m
		}, now, ErrForged},
		{"no signature", func() *esptest.Message {
			m := sns.Notification(ses, now, "2")
			m.Signature = ""
			return m
		}, now, ErrUnauthenticated},
		{"certificate on another host", func() *esptest.Message {
			m := sns.Notification(ses, now, "2")
			m.SigningCertURL = "https://sns.us-east-1.amazonaws.com.evil.example/cert.pem"
			sns.Sign(m)
			return m
		}, now, ErrForged},
		{"certificate over http", func() *esptest.Message {
			m := sns.Notification(ses, now, "2")
			m.SigningCertURL = strings.Replace(sns.CertURL(), "https:", "http:", 1)
			sns.Sign(m)
			return m
		}, now, ErrForged},
		{"certificate URL with user info", func() *esptest.Message {
			m := sns.Notification(ses, now, "2")
			m.SigningCertURL = strings.Replace(sns.CertURL(), "https://", "https://evil.example@", 1)
			sns.Sign(m)
			return m
		}, now, ErrForged},
		{"subscribe URL on another host", func() *esptest.Message {
			m := sns.SubscriptionConfirmation(now)
			m.SubscribeURL = "https://evil.example/?Action=ConfirmSubscription"
			sns.Sign(m)
			return m
		}, now, ErrForged},
		{"certificate expired", func() *esptest.Message { return sns.Notification(ses, now.Add(366*24*time.Hour), "2") },
			now.Add(366 * 24 * time.Hour), ErrForged},
		{"certificate not to be had", func() *esptest.Message {
			m := sns.Notification(ses, now, "2")
			m.SigningCertURL = sns.Server.URL + "/missing.pem"
			sns.Sign(m)
			return m
		}, now, ErrCertUnavailable},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := DecodeSNS(c.msg().JSON())
			if err != nil {
				t.Fatal(err)
			}
			err = v.Verify(context.Background(), m, c.at)
			if c.err == nil && err != nil || c.err != nil && !errors.Is(err, c.err) {
				t.Fatalf("Verify: %v, want %v", err, c.err)
			}
		})
	}
	for _, bad := range []string{`{}`, `{"Type":"Notification"}`, `{"Type":"Other","MessageId":"1","TopicArn":"a","Timestamp":"t"}`,
		`{"Type":1}`, `nope`} {
		if _, err := DecodeSNS([]byte(bad)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%q: %v, want ErrMalformed", bad, err)
		}
	}
}

// TestSNSHostPattern: the default host pattern takes SNS's regional hosts
// and nothing that merely contains one.
func TestSNSHostPattern(t *testing.T) {
	v := &SNSVerifier{}
	for u, ok := range map[string]bool{
		"https://sns.us-east-1.amazonaws.com/SimpleNotificationService-abc.pem":     true,
		"https://sns.eu-central-1.amazonaws.com/SimpleNotificationService-abc.pem":  true,
		"https://SNS.US-EAST-1.AMAZONAWS.COM/x.pem":                                 true,
		"http://sns.us-east-1.amazonaws.com/x.pem":                                  false,
		"https://sns.us-east-1.amazonaws.com.evil.example/x.pem":                    false,
		"https://evil.example/sns.us-east-1.amazonaws.com/x.pem":                    false,
		"https://sns.us-east-1.amazonaws.com@evil.example/x.pem":                    false,
		"https://user@sns.us-east-1.amazonaws.com/x.pem":                            false,
		"https://s3.amazonaws.com/sns.us-east-1.amazonaws.com/x.pem":                false,
		"https://xsns.us-east-1.amazonaws.com/x.pem":                                false,
		"https://sns.us-east-1.amazonaws.com:443/x.pem":                             true,
		"https:sns.us-east-1.amazonaws.com/x.pem":                                   false,
		"https://sns.us-east-1.amazonaws.com\\@evil.example/x.pem":                  false,
		"https://sns.us-east-1.amazonaws.com%2eevil.example/SimpleNotification.pem": false,
	} {
		if _, err := v.CheckURL(u); (err == nil) != ok {
			t.Errorf("%s: %v, want allowed %v", u, err, ok)
		}
	}
	if !ValidTopicARN(esptest.Topic) || !ValidTopicARN("arn:aws-cn:sns:cn-north-1:123456789012:t.fifo") ||
		ValidTopicARN("arn:aws:sqs:us-east-1:123456789012:q") || ValidTopicARN("feedmail") {
		t.Error("ValidTopicARN")
	}
}

// TestPostmark: basic authentication as configured, and Postmark's bounce
// and spam complaint samples (the email named by the Message-ID in the
// bounce content or the metadata), a delivery ignored.
func TestPostmark(t *testing.T) {
	auth, err := ParsePostmarkAuth("feedmail:correct-horse-battery")
	if err != nil {
		t.Fatal(err)
	}
	basic := func(s string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(s)) }
	for hdr, want := range map[string]error{
		basic("feedmail:correct-horse-battery"):                                                nil,
		"basic " + base64.StdEncoding.EncodeToString([]byte("feedmail:correct-horse-battery")): nil,
		basic("feedmail:correct-horse-batterz"):                                                ErrForged,
		basic("feedmai1:correct-horse-battery"):                                                ErrForged,
		basic("feedmail"):                                                                      ErrForged,
		basic(":"):                                                                             ErrForged,
		"Basic !!!":                                                                            ErrForged,
		"":                                                                                     ErrUnauthenticated,
		"Bearer correct-horse-battery":                                                         ErrUnauthenticated,
	} {
		if err := auth.Check(hdr); want == nil && err != nil || want != nil && !errors.Is(err, want) {
			t.Errorf("%q: %v, want %v", hdr, err, want)
		}
	}
	for _, bad := range []string{"", "user", "user:", ":password-long-enough", "user:short"} {
		if _, err := ParsePostmarkAuth(bad); err == nil {
			t.Errorf("ParsePostmarkAuth(%q) accepted", bad)
		}
	}

	b, err := ParsePostmark(sample(t, "postmark-bounce.json"), opt)
	if err != nil {
		t.Fatal(err)
	}
	check(t, "bounce", b, 0, want{KindBounce, bounce.UnknownUser, bounce.Hard, "5.1.1", false})
	if n := b.Notices[0]; !slices.Equal(n.Tokens, []string{"UNSUBTOKEN"}) || n.Recipient != "john@example.com" ||
		n.Failure.Code != 550 || !slices.Contains(n.MessageIDs, "dsn-1234@mx.example.com") {
		t.Errorf("bounce: %+v", n)
	}
	b, err = ParsePostmark(sample(t, "postmark-spam-complaint.json"), opt)
	if err != nil {
		t.Fatal(err)
	}
	check(t, "complaint", b, 0, want{kind: KindComplaint})
	b, err = ParsePostmark(sample(t, "postmark-delivery.json"), opt)
	if err != nil || len(b.Notices) != 0 || b.Ignored != 1 {
		t.Errorf("delivery: %+v %v", b, err)
	}
	// Types by code, and types that are no failure.
	for body, w := range map[string]want{
		`{"RecordType":"Bounce","TypeCode":4096,"Details":"smtp;552 5.2.2 mailbox full","Metadata":{"message_id":"` + ourID + `"}}`: {
			KindBounce, bounce.MailboxFull, bounce.Soft, "5.2.2", false},
		`{"RecordType":"Bounce","Type":"Transient","Details":"","Metadata":{"MessageId":"<` + ourID + `>"}}`: {
			KindBounce, bounce.Temporary, bounce.None, "", true},
		`{"RecordType":"Bounce","Type":"DMARCPolicy","Details":"","Metadata":{"message-id":"` + ourID + `"}}`: {
			KindBounce, bounce.Authentication, bounce.None, "", false},
		`{"RecordType":"Bounce","Type":"Blocked","Details":"ISP block","Metadata":{"message-id":"` + ourID + `"}}`: {
			KindBounce, bounce.Blocked, bounce.None, "", false},
	} {
		b, err := ParsePostmark([]byte(body), opt)
		if err != nil {
			t.Fatal(err)
		}
		check(t, body, b, 0, w)
	}
	for _, typ := range []string{"AutoResponder", "Unsubscribe", "ManuallyDeactivated", "InboundError", "ChallengeVerification"} {
		b, err := ParsePostmark([]byte(`{"RecordType":"Bounce","Type":"`+typ+`"}`), opt)
		if err != nil || len(b.Notices) != 0 || b.Ignored != 1 {
			t.Errorf("%s: %+v %v, want ignored", typ, b, err)
		}
	}
	for _, bad := range []string{``, `[]`, `{}`, `{"RecordType":5}`} {
		if _, err := ParsePostmark([]byte(bad), opt); !errors.Is(err, ErrMalformed) {
			t.Errorf("%q: %v, want ErrMalformed", bad, err)
		}
	}
}

// TestSendGrid: the signed Event Webhook under a key the test made, and
// SendGrid's sample batch of events.
func TestSendGrid(t *testing.T) {
	sg := esptest.NewSendGrid(t)
	key, err := ParseSendGridKey(sg.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	other, err := ParseSendGridKey(esptest.NewSendGrid(t).PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	body := sample(t, "sendgrid-events.json")
	sig, ts := sg.Sign(body, now)
	oldSig, oldTS := sg.Sign(body, now.Add(-11*time.Minute))
	cases := []struct {
		name    string
		key     any
		body    []byte
		sig, ts string
		want    error
	}{
		{name: "genuine", body: body, sig: sig, ts: ts},
		{name: "another key", key: other, body: body, sig: sig, ts: ts, want: ErrForged},
		{name: "body altered", body: append([]byte(" "), body...), sig: sig, ts: ts, want: ErrForged},
		{name: "timestamp altered", body: body, sig: sig, ts: oldTS, want: ErrForged},
		{name: "stale", body: body, sig: oldSig, ts: oldTS, want: ErrStale},
		{name: "no signature", body: body, ts: ts, want: ErrUnauthenticated},
		{name: "garbage signature", body: body, sig: "%%%", ts: ts, want: ErrForged},
	}
	for _, c := range cases {
		k := key
		if c.key != nil {
			k = other
		}
		if err := VerifySendGrid(k, c.body, c.sig, c.ts, now); c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	for _, bad := range []string{"", "bm90IGEga2V5", "-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----"} {
		if _, err := ParseSendGridKey(bad); err == nil {
			t.Errorf("ParseSendGridKey(%q) accepted", bad)
		}
	}

	b, err := ParseSendGrid(body, opt)
	if err != nil {
		t.Fatal(err)
	}
	check(t, "events", b, 3,
		want{KindBounce, bounce.Temporary, bounce.None, "", true},         // deferred
		want{KindBounce, bounce.UnknownUser, bounce.Hard, "5.1.1", false}, // bounce, Invalid Address
		want{KindBounce, bounce.Blocked, bounce.None, "5.7.1", false},     // blocked, reputation
		want{KindBounce, bounce.NotAccepting, bounce.Hard, "", false},     // dropped, Bounced Address
		want{kind: KindComplaint})                                         // spamreport
	// The classification decides when the reply says nothing.
	for class, w := range map[string]want{
		"Invalid Address":     {KindBounce, bounce.UnknownUser, bounce.Hard, "", false},
		"Mailbox Unavailable": {KindBounce, bounce.NotAccepting, bounce.Hard, "", false},
		"Reputation":          {KindBounce, bounce.Blocked, bounce.None, "", false},
		"Frequency or Volume": {KindBounce, bounce.RateLimited, bounce.None, "", false},
		"Content":             {KindBounce, bounce.Policy, bounce.None, "", false},
		"":                    {KindBounce, bounce.NotAccepting, bounce.Hard, "", false},
	} {
		b, err := ParseSendGrid([]byte(`[{"event":"bounce","type":"bounce","smtp-id":"<`+ourID+`>","bounce_classification":"`+class+`"}]`), opt)
		if err != nil {
			t.Fatal(err)
		}
		check(t, "classification "+class, b, 0, w)
	}
	b, _ = ParseSendGrid([]byte(`[{"event":"bounce","type":"blocked","smtp-id":"<`+ourID+`>"}]`), opt)
	check(t, "blocked, unclassified", b, 0, want{KindBounce, bounce.Temporary, bounce.None, "", false})
	for _, bad := range []string{``, `{}`, `[1]`} {
		if _, err := ParseSendGrid([]byte(bad), opt); !errors.Is(err, ErrMalformed) {
			t.Errorf("%q: %v, want ErrMalformed", bad, err)
		}
	}
}

// TestMailgun: the HMAC of timestamp and token under the signing key,
// Mailgun's failed (permanent and temporary) and complained samples, a
// delivery ignored, and the replay memory.
func TestMailgun(t *testing.T) {
	key := []byte("key-3ax6xnjp29jd6fds4gc373sgvjxteol0")
	raw := sample(t, "mailgun-failed-permanent.json")
	cases := []struct {
		name string
		body []byte
		key  []byte
		want error
	}{
		{"genuine", esptest.SignMailgun(raw, key, now, "a8ce0edb2dd8301dcd5f0d64e4fa1cd2a0e3ab4b26a8ae5f31"), key, nil},
		{"another key", esptest.SignMailgun(raw, []byte("key-other"), now, "tok"), key, ErrForged},
		{"stale", esptest.SignMailgun(raw, key, now.Add(-11*time.Minute), "tok"), key, ErrStale},
		{"from the future", esptest.SignMailgun(raw, key, now.Add(6*time.Minute), "tok"), key, ErrStale},
		{"unsigned", raw, key, ErrForged},
		{"no signature", []byte(`{"event-data":{"event":"failed"}}`), key, ErrUnauthenticated},
	}
	for _, c := range cases {
		m, err := DecodeMailgun(c.body)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if err := m.Verify(c.key, now); c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	// The event's data is signed by nothing but the token: altering it
	// keeps a valid signature, which is why the email must still be ours.
	for file, w := range map[string][]want{
		"mailgun-failed-permanent.json": {{KindBounce, bounce.UnknownUser, bounce.Hard, "5.1.1", false}},
		"mailgun-failed-temporary.json": {{KindBounce, bounce.MailboxFull, bounce.Soft, "4.2.2", true}},
		"mailgun-complained.json":       {{kind: KindComplaint}},
	} {
		m, err := DecodeMailgun(sample(t, file))
		if err != nil {
			t.Fatal(err)
		}
		check(t, file, m.Batch(opt), 0, w...)
	}
	m, _ := DecodeMailgun(sample(t, "mailgun-failed-permanent.json"))
	if n := m.Batch(opt).Notices[0]; n.Failure.Code != 550 || !slices.Equal(n.Tokens, []string{"RETURNTOKEN"}) {
		t.Errorf("permanent: %+v", n)
	}
	m, _ = DecodeMailgun(sample(t, "mailgun-delivered.json"))
	if b := m.Batch(opt); len(b.Notices) != 0 || b.Ignored != 1 {
		t.Errorf("delivered: %+v", b)
	}
	for _, bad := range []string{``, `[]`, `{}`, `{"event-data":{}}`} {
		if _, err := DecodeMailgun([]byte(bad)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%q: %v, want ErrMalformed", bad, err)
		}
	}

	seen := &Seen{Max: 3}
	stamp := func(d time.Duration) string { return strconv.FormatInt(now.Add(d).Unix(), 10) }
	seen.Add("a", stamp(0), now)
	if !seen.Has("a", now.Add(time.Minute)) || seen.Has("b", now) {
		t.Error("Seen does not remember a token")
	}
	if seen.Has("a", now.Add(WebhookTolerance+2*time.Second)) {
		t.Error("Seen remembers a token past its tolerance")
	}
	for _, tok := range []string{"b", "c", "d", "e"} {
		seen.Add(tok, stamp(0), now)
	}
	if n := len(seen.tokens); n > 3 {
		t.Errorf("Seen holds %d tokens, at most 3", n)
	}
}

// TestTokens: return tokens are taken from addresses on the bounce
// address only, whatever the case, and not from longer names around it.
func TestTokens(t *testing.T) {
	for text, wantToks := range map[string][]string{
		"bounces+abc@mail.feedmail.test":                             {"abc"},
		"<BOUNCES+Abc@Mail.Feedmail.Test>":                           {"Abc"},
		"mailto:bounces+u-x@mail.feedmail.test?subject=unsubscribe":  {"u-x"},
		"xbounces+abc@mail.feedmail.test":                            nil,
		"bounces+abc@mail.feedmail.test.evil.example":                nil,
		"bounces+abc@mail.feedmail.testing":                          nil,
		"Return-Path: <bounces+abc@mail.feedmail.test>.":             {"abc"},
		"bounces+@mail.feedmail.test bounces+b@mail.feedmail.test":   {"b"},
		"bounces+a@mail.feedmail.test, bounces+a@mail.feedmail.test": {"a"},
		"bounces+a@other.example":                                    nil,
		"feedmail@feedmail.test":                                     nil,
	} {
		if got := opt.tokens(nil, text); !slices.Equal(got, wantToks) {
			t.Errorf("%q: %q, want %q", text, got, wantToks)
		}
	}
	if got := (Options{}).tokens(nil, "bounces+abc@mail.feedmail.test"); got != nil {
		t.Errorf("no bounce address: %q", got)
	}
}
