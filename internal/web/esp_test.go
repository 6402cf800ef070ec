package web

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/feedmail/feedmail/internal/esp"
	"github.com/feedmail/feedmail/internal/inbound"
	"github.com/feedmail/feedmail/internal/metrics"
	"github.com/feedmail/feedmail/internal/outbox"
	"github.com/feedmail/feedmail/internal/testkit/esptest"
)

// fakeNotices records the notices it is given; fail makes it fail like a
// database that is away.
type fakeNotices struct {
	mu      sync.Mutex
	got     []outbox.Notice
	fail    bool
	handled map[string]bool
}

func (f *fakeNotices) HandleNotice(_ context.Context, n outbox.Notice) (outbox.Outcome, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail {
		return outbox.Outcome{}, errors.New("database is away")
	}
	f.got = append(f.got, n)
	if f.handled == nil {
		f.handled = map[string]bool{}
	}
	key := n.Format + string(n.Kind) + n.Failure.Status + strings.Join(n.MessageIDs, ",")
	out := outbox.Outcome{Kind: string(n.Kind), Email: 7, Action: "hard bounce counted"}
	if f.handled[key] {
		out.Action = "already handled"
	}
	f.handled[key] = true
	return out, nil
}

func (f *fakeNotices) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.got)
}

func espSample(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("../esp/testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// espHarness is a server with every email service on.
type espHarness struct {
	*harness
	notices  *fakeNotices
	sns      *esptest.SNS
	sendgrid *esptest.SendGrid
	mailgun  []byte
	m        *metrics.Metrics
}

func newESPHarness(t *testing.T) *espHarness {
	t.Helper()
	m := metrics.New()
	h := newHarness(t, func(d *Deps) { d.Metrics = m })
	e := &espHarness{harness: h, notices: &fakeNotices{}, sns: esptest.NewSNS(t, h.clk.Now()),
		sendgrid: esptest.NewSendGrid(t), mailgun: []byte("key-mailgun-test-signing-key"), m: m}
	pm, err := esp.ParsePostmarkAuth("postmark:a-long-random-password")
	if err != nil {
		t.Fatal(err)
	}
	key, err := esp.ParseSendGridKey(e.sendgrid.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	h.srv.MountESP(ESPOptions{Notices: e.notices, SESTopics: []string{esptest.Topic}, SNSHost: e.sns.Host,
		SNSClient: e.sns.Client, Postmark: &pm, SendGridKey: key, MailgunKey: e.mailgun,
		BounceAddress: "bounces@mail.feedmail.test"})
	return e
}

func (e *espHarness) post(provider string, body []byte, hdr map[string]string) *httptest.ResponseRecorder {
	e.t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/webhooks/"+provider, strings.NewReader(string(body)))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Origin", "https://"+provider+".example") // a service, not a browser
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	r.RemoteAddr = "192.0.2.50:443"
	w := httptest.NewRecorder()
	e.srv.Handler().ServeHTTP(w, r)
	return w
}

func (e *espHarness) outcome(provider, outcome string) float64 {
	var d dto.Metric
	if err := e.m.ESPNotices.WithLabelValues(provider, outcome).Write(&d); err != nil {
		e.t.Fatal(err)
	}
	return d.GetCounter().GetValue()
}

// TestESPWebhookAnswers checks each service's genuine callbacks reach the
// notice handler with what names the email, and what every refused
// callback is answered: 401 without credentials, 403 for a forged or
// stale one, 400 for a malformed body, 404 for a service not configured,
// 413 over the size limit, 503 when the database is away.
func TestESPWebhookAnswers(t *testing.T) {
	e := newESPHarness(t)
	now := e.clk.Now()
	sesBounce := string(espSample(t, "ses-bounce-permanent.json"))
	pmAuth := "Basic " + base64.StdEncoding.EncodeToString([]byte("postmark:a-long-random-password"))
	sgBody := espSample(t, "sendgrid-events.json")
	sgSig, sgTS := e.sendgrid.Sign(sgBody, now)
	mgBody := esptest.SignMailgun(espSample(t, "mailgun-failed-permanent.json"), e.mailgun, now, "token-1")

	cases := []struct {
		name, provider string
		body           []byte
		hdr            map[string]string
		code           int
		notices        int // how many reach the handler
	}{
		{"ses notification", "ses", e.sns.Notification(sesBounce, now, "2").JSON(), nil, 200, 1},
		{"ses delivery", "ses", e.sns.Notification(string(espSample(t, "ses-delivery.json")), now, "1").JSON(), nil, 200, 0},
		{"ses forged", "ses", func() []byte {
			m := e.sns.Notification(sesBounce, now, "2")
			m.Message = strings.Replace(m.Message, "Permanent", "Transient", 1)
			return m.JSON()
		}(), nil, 403, 0},
		{"ses stale", "ses", e.sns.Notification(sesBounce, now.Add(-2*time.Hour), "2").JSON(), nil, 403, 0},
		{"ses certificate elsewhere", "ses", func() []byte {
			m := e.sns.Notification(sesBounce, now, "2")
			m.SigningCertURL = "https://sns.us-east-1.amazonaws.com.evil.example/cert.pem"
			e.sns.Sign(m)
			return m.JSON()
		}(), nil, 403, 0},
		{"ses certificate missing", "ses", func() []byte {
			m := e.sns.Notification(sesBounce, now, "2")
			m.SigningCertURL = e.sns.Server.URL + "/nothing.pem"
			e.sns.Sign(m)
			return m.JSON()
		}(), nil, 503, 0},
		{"ses without SNS", "ses", []byte(sesBounce), nil, 400, 0},
		{"ses garbage", "ses", []byte("{"), nil, 400, 0},
		{"postmark bounce", "postmark", espSample(t, "postmark-bounce.json"), map[string]string{"Authorization": pmAuth}, 200, 1},
		{"postmark complaint", "postmark", espSample(t, "postmark-spam-complaint.json"), map[string]string{"Authorization": pmAuth}, 200, 1},
		{"postmark no credentials", "postmark", espSample(t, "postmark-bounce.json"), nil, 401, 0},
		{"postmark wrong password", "postmark", espSample(t, "postmark-bounce.json"),
			map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte("postmark:guess"))}, 403, 0},
		{"postmark malformed", "postmark", []byte("[]"), map[string]string{"Authorization": pmAuth}, 400, 0},
		{"sendgrid batch", "sendgrid", sgBody, map[string]string{esp.SendGridSignatureHeader: sgSig, esp.SendGridTimestampHeader: sgTS}, 200, 5},
		{"sendgrid unsigned", "sendgrid", sgBody, nil, 401, 0},
		{"sendgrid altered", "sendgrid", append([]byte(" "), sgBody...),
			map[string]string{esp.SendGridSignatureHeader: sgSig, esp.SendGridTimestampHeader: sgTS}, 403, 0},
		{"mailgun failed", "mailgun", mgBody, nil, 200, 1},
		{"mailgun replayed token", "mailgun", mgBody, nil, 200, 0},
		{"mailgun wrong key", "mailgun", esptest.SignMailgun(espSample(t, "mailgun-failed-permanent.json"), []byte("other"), now, "token-2"), nil, 403, 0},
		{"mailgun stale", "mailgun", esptest.SignMailgun(espSample(t, "mailgun-failed-permanent.json"), e.mailgun, now.Add(-time.Hour), "token-3"), nil, 403, 0},
		{"unknown service", "sparkpost", []byte("{}"), nil, 404, 0},
	}
	for _, c := range cases {
		before := e.notices.count()
		w := e.post(c.provider, c.body, c.hdr)
		if w.Code != c.code {
			t.Errorf("%s: %d %q, want %d", c.name, w.Code, w.Body.String(), c.code)
		}
		if got := e.notices.count() - before; got != c.notices {
			t.Errorf("%s: %d notices handled, want %d", c.name, got, c.notices)
		}
	}
	if w := e.post("postmark", nil, nil); w.Header().Get("WWW-Authenticate") == "" {
		t.Error("401 without WWW-Authenticate")
	}

	// What reached the handler names the email and its service.
	first := e.notices.got[0]
	if first.Kind != inbound.KindBounce || first.Format != "ses" || first.Failure.Status != "5.1.1" ||
		first.Failure.Hint == "" || len(first.MessageIDs) == 0 || first.MessageIDs[0] != "item-12-34.ABCDEFGHIJKLMNOP@feedmail.test" ||
		len(first.Tokens) != 1 || first.Tokens[0] != "RETURNTOKEN" {
		t.Errorf("SES notice: %+v", first)
	}
	if e.sns.CertFetches.Load() != 1 {
		t.Errorf("the SNS certificate was fetched %d times, want once (cached)", e.sns.CertFetches.Load())
	}
	if got := e.outcome("mailgun", "replay"); got != 1 {
		t.Errorf("mailgun replays counted: %v", got)
	}
	if got := e.outcome("ses", "refused"); got != 3 {
		t.Errorf("ses refusals counted: %v, want 3", got)
	}

	// A database that is away: 503, so the service sends it again; then
	// it goes through.
	e.notices.fail = true
	body := esptest.SignMailgun(espSample(t, "mailgun-complained.json"), e.mailgun, now, "token-4")
	if w := e.post("mailgun", body, nil); w.Code != http.StatusServiceUnavailable {
		t.Errorf("database away: %d", w.Code)
	}
	e.notices.fail = false
	if w := e.post("mailgun", body, nil); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "1 applied") {
		t.Errorf("the retry after the database came back: %d %q", w.Code, w.Body.String())
	}

	// Over the size limit.
	big := append([]byte(`{"RecordType":"Bounce","Details":"`), []byte(strings.Repeat("x", MaxESPBody))...)
	if w := e.post("postmark", big, map[string]string{"Authorization": pmAuth}); w.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized body: %d", w.Code)
	}
}

// TestESPServicesOffAnswer404: a service without settings is not there.
func TestESPServicesOffAnswer404(t *testing.T) {
	h := newHarness(t)
	h.srv.MountESP(ESPOptions{Notices: &fakeNotices{}})
	for _, p := range []string{"ses", "postmark", "sendgrid", "mailgun", "stripe"} {
		if w := h.do(req{method: "POST", path: "/webhooks/" + p}); w.Code != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", p, w.Code)
		}
	}
}

// TestSNSSubscriptionConfirmation: a genuine confirmation for our topic is
// confirmed by fetching its SubscribeURL; one for another topic, or whose
// SubscribeURL is on another host, is not.
func TestSNSSubscriptionConfirmation(t *testing.T) {
	e := newESPHarness(t)
	now := e.clk.Now()
	if w := e.post("ses", e.sns.SubscriptionConfirmation(now).JSON(), nil); w.Code != http.StatusOK {
		t.Fatalf("confirmation: %d %q", w.Code, w.Body.String())
	}
	if n := e.sns.Confirmations.Load(); n != 1 {
		t.Fatalf("%d confirmations reached SNS, want 1", n)
	}
	other := e.sns.SubscriptionConfirmation(now)
	other.TopicArn = "arn:aws:sns:us-east-1:123456789012:not-ours"
	e.sns.Sign(other)
	elsewhere := e.sns.SubscriptionConfirmation(now)
	elsewhere.SubscribeURL = "https://evil.example/?Action=ConfirmSubscription"
	e.sns.Sign(elsewhere)
	for name, m := range map[string]*esptest.Message{"another topic": other, "subscribe URL elsewhere": elsewhere} {
		if w := e.post("ses", m.JSON(), nil); w.Code != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", name, w.Code)
		}
	}
	if n := e.sns.Confirmations.Load(); n != 1 {
		t.Errorf("%d confirmations reached SNS, want still 1", n)
	}
	if got := e.outcome("ses", "confirmed"); got != 1 {
		t.Errorf("confirmed counted %v", got)
	}
}
