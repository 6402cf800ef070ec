package security

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/esp"
	"github.com/feedmail/feedmail/internal/outbox"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/esptest"
	"github.com/feedmail/feedmail/internal/web"
)

// sampleID is the Message-ID package esp's samples carry; the tests put
// the Message-ID of an email feedmail really sent in its place.
const sampleID = "item-12-34.ABCDEFGHIJKLMNOP@feedmail.test"

const postmarkUser, postmarkPassword = "postmark", "pm-webhook-password-0123"

// espEnv is env with the email services' webhooks mounted (keys made by
// the test) and served by a real HTTP server.
type espEnv struct {
	*env
	sns    *esptest.SNS
	sg     *esptest.SendGrid
	mgKey  []byte
	server *httptest.Server
}

func newESPEnv(t *testing.T) *espEnv {
	t.Helper()
	x := &espEnv{env: newEnv(t, envOpt{}), sg: esptest.NewSendGrid(t), mgKey: []byte("key-security-tests-mailgun")}
	x.sns = esptest.NewSNS(t, x.clk.Now())
	pm, err := esp.ParsePostmarkAuth(postmarkUser + ":" + postmarkPassword)
	if err != nil {
		t.Fatal(err)
	}
	key, err := esp.ParseSendGridKey(x.sg.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	x.srv.MountESP(web.ESPOptions{
		Notices:   &outbox.Returns{Store: x.st, Links: x.links, Clock: x.clk, Metrics: x.m},
		SESTopics: []string{esptest.Topic}, SNSHost: x.sns.Host, SNSClient: x.sns.Client,
		Postmark: &pm, SendGridKey: key, MailgunKey: x.mgKey})
	x.server = httptest.NewServer(x.h)
	t.Cleanup(x.server.Close)
	return x
}

// sentEmail is an email feedmail sent over SMTP to one reader.
type sentEmail struct {
	user, outbox int64
	addr, msgID  string // msgID without angle brackets
}

// send has one new post mailed to each address (a reader with 100
// credits) and returns each email as sent.
func (x *espEnv) send(addrs ...string) map[string]sentEmail {
	x.t.Helper()
	ds := newDocServer(x.t, hostileFeed(quietItem))
	f, _, err := x.st.EnsureFeed(x.ctx, ds.url())
	if err != nil {
		x.t.Fatal(err)
	}
	users := map[string]int64{}
	for _, a := range addrs {
		u, _ := x.reader(a, f.ID, "")
		users[a] = u.ID
	}
	x.pollAll()
	ds.set(hostileFeed(`<item><title>News</title><link>https://ok.example/news</link><guid>news-1</guid>
<pubDate>Mon, 23 Nov 2026 08:30:00 GMT</pubDate><description>hello</description></item>` + quietItem))
	x.clk.Advance(time.Hour)
	x.pollAll()
	x.sendAll()
	out := map[string]sentEmail{}
	for _, m := range x.smtp.Messages() {
		to := strings.Trim(m.Header.Get("To"), "<> ")
		if i := strings.LastIndexByte(to, '<'); i >= 0 {
			to = strings.TrimSuffix(to[i+1:], ">")
		}
		id, ok := users[to]
		if !ok {
			continue
		}
		var row store.OutboxRow
		if err := x.st.DB.Where("user_id = ? AND state = ?", id, store.OutboxSent).Take(&row).Error; err != nil {
			x.t.Fatal(err)
		}
		if row.MessageID != m.Header.Get("Message-ID") {
			x.t.Fatalf("outbox Message-ID %q, sent %q", row.MessageID, m.Header.Get("Message-ID"))
		}
		out[to] = sentEmail{user: id, outbox: row.ID, addr: to, msgID: strings.Trim(row.MessageID, "<>")}
	}
	if len(out) != len(addrs) {
		x.t.Fatalf("%d of %d emails sent", len(out), len(addrs))
	}
	return out
}

// sample returns package esp's sample name about email em.
func sample(t *testing.T, name string, em sentEmail) string {
	t.Helper()
	b, err := os.ReadFile("../../internal/esp/testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.ReplaceAll(string(b), sampleID, em.msgID)
	for _, a := range []string{"jane@example.com", "john@example.com", "alice@example.com", "example@test.com", "richard@example.com"} {
		s = strings.ReplaceAll(s, a, em.addr)
	}
	return s
}

// post sends a callback over HTTP as the service would.
func (x *espEnv) post(provider string, body []byte, hdr map[string]string) (int, string) {
	x.t.Helper()
	req, err := http.NewRequest(http.MethodPost, x.server.URL+"/webhooks/"+provider, strings.NewReader(string(body)))
	if err != nil {
		x.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := x.server.Client().Do(req)
	if err != nil {
		x.t.Fatal(err)
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(text))
}

// state is what the store shows about one email and its reader.
type state struct {
	events             int64 // inbound_events rows about the email
	hard, soft         int
	balance            int64
	severity, party    string
	reason, subscribed string
}

func (x *espEnv) state(em sentEmail) state {
	x.t.Helper()
	var s state
	if err := x.st.DB.Model(&store.InboundEvent{}).Where("outbox_id = ?", em.outbox).Count(&s.events).Error; err != nil {
		x.t.Fatal(err)
	}
	var ev store.InboundEvent
	if s.events > 0 {
		if err := x.st.DB.Where("outbox_id = ?", em.outbox).Take(&ev).Error; err != nil {
			x.t.Fatal(err)
		}
	}
	s.severity, s.party, s.reason = ev.Severity, ev.Party, ev.Reason
	u, err := x.st.UserByID(x.ctx, em.user)
	if err != nil {
		x.t.Fatal(err)
	}
	s.hard, s.soft, s.balance = u.HardBounces, u.SoftBounces, u.Balance
	var subs []store.Subscription
	if err := x.st.DB.Where("user_id = ?", em.user).Find(&subs).Error; err != nil || len(subs) != 1 {
		x.t.Fatalf("subscriptions: %v %d", err, len(subs))
	}
	s.subscribed = subs[0].State
	return s
}

// TestESPWebhookEndToEnd sends two posts over SMTP, then has SES report,
// through SNS to the real HTTP server, a permanent bounce of one (unknown
// user: one hard bounce counted, the credit refunded) and a "blocked"
// bounce of the other (the sending IP on a blocklist: counted against
// nobody, the credit refunded all the same); SNS delivering the first
// again changes nothing.
func TestESPWebhookEndToEnd(t *testing.T) {
	x := newESPEnv(t)
	sent := x.send("dead@example.net", "fine@example.net")
	dead, fine := sent["dead@example.net"], sent["fine@example.net"]
	now := x.clk.Now()

	hardBounce := x.sns.Notification(sample(t, "ses-bounce-permanent.json", dead), now, "2").JSON()
	if code, text := x.post("ses", hardBounce, nil); code != http.StatusOK || !strings.Contains(text, "1 applied") {
		t.Fatalf("permanent bounce: %d %q", code, text)
	}
	want := state{events: 1, hard: 1, balance: 100, severity: "hard", party: "reader", reason: "unknown-user", subscribed: store.SubActive}
	if got := x.state(dead); got != want {
		t.Errorf("after the permanent bounce: %+v, want %+v", got, want)
	}

	blocked := x.sns.Notification(sample(t, "ses-bounce-blocked.json", fine), now, "1").JSON()
	if code, text := x.post("ses", blocked, nil); code != http.StatusOK || !strings.Contains(text, "1 applied") {
		t.Fatalf("blocked bounce: %d %q", code, text)
	}
	want = state{events: 1, balance: 100, party: "sender", reason: "blocked", subscribed: store.SubActive}
	if got := x.state(fine); got != want {
		t.Errorf("after the blocked bounce: %+v, want %+v", got, want)
	}

	// SNS retries a delivery with the same message: nothing more happens.
	x.clk.Advance(20 * time.Second)
	if code, text := x.post("ses", hardBounce, nil); code != http.StatusOK || !strings.Contains(text, "1 duplicate") {
		t.Fatalf("the same notification again: %d %q", code, text)
	}
	if got := x.state(dead); got.events != 1 || got.hard != 1 || got.balance != 100 {
		t.Errorf("after the repeat: %+v", got)
	}
	if n := x.sns.CertFetches.Load(); n != 1 {
		t.Errorf("the signing certificate was fetched %d times, want 1", n)
	}
}

// TestESPWebhookForgedAndReplayed sends each service's callbacks about an
// email feedmail sent: forged ones (no credentials, a wrong password, a
// wrong key, an altered body, another SNS topic, a certificate on another
// host, a stale timestamp) are refused with 401 or 403 and change
// nothing; the genuine one has its effect; the same genuine callback
// again (at once, and for SendGrid and Mailgun after their tolerance) has
// none: exactly one inbound_events row, the credit refunded once.
func TestESPWebhookForgedAndReplayed(t *testing.T) {
	x := newESPEnv(t)
	sent := x.send("ses@example.net", "postmark@example.net", "sendgrid@example.net", "mailgun@example.net")
	now := x.clk.Now()
	basic := func(user, pass string) map[string]string {
		return map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))}
	}

	type callback struct {
		name string
		body []byte
		hdr  map[string]string
		code int
	}
	sesMsg := sample(t, "ses-bounce-permanent.json", sent["ses@example.net"])
	otherTopic := x.sns.Notification(sesMsg, now, "2")
	otherTopic.TopicArn = "arn:aws:sns:us-east-1:210987654321:attacker"
	x.sns.Sign(otherTopic)
	elsewhere := x.sns.Notification(sesMsg, now, "2")
	elsewhere.SigningCertURL = "https://sns.us-east-1.amazonaws.com.evil.example/SimpleNotificationService-x.pem"
	x.sns.Sign(elsewhere)
	altered := x.sns.Notification(strings.Replace(sesMsg, `"Permanent"`, `"Permanent" `, 1), now, "2")
	altered.Message = sesMsg

	pmBody := []byte(sample(t, "postmark-bounce.json", sent["postmark@example.net"]))

	// Of SendGrid's sample batch, its hard bounce.
	var events []map[string]any
	if err := json.Unmarshal([]byte(sample(t, "sendgrid-events.json", sent["sendgrid@example.net"])), &events); err != nil {
		t.Fatal(err)
	}
	var bounces []map[string]any
	for _, ev := range events {
		if ev["event"] == "bounce" && ev["type"] == "bounce" {
			bounces = append(bounces, ev)
		}
	}
	sgBody, err := json.Marshal(bounces)
	if err != nil || len(bounces) != 1 {
		t.Fatalf("%d bounces: %v", len(bounces), err)
	}
	sgSig, sgTS := x.sg.Sign(sgBody, now)
	otherSG := esptest.NewSendGrid(t)
	wrongSig, _ := otherSG.Sign(sgBody, now)
	staleSig, staleTS := x.sg.Sign(sgBody, now.Add(-11*time.Minute))
	sgHdr := func(sig, ts string) map[string]string {
		return map[string]string{esp.SendGridSignatureHeader: sig, esp.SendGridTimestampHeader: ts}
	}

	mgRaw := []byte(sample(t, "mailgun-failed-permanent.json", sent["mailgun@example.net"]))
	mgBody := esptest.SignMailgun(mgRaw, x.mgKey, now, "mg-token-genuine-0001")

	providers := []struct {
		provider, addr string
		forged         []callback
		genuine        callback
	}{
		{"ses", "ses@example.net", []callback{
			{"unsigned", []byte(sesMsg), nil, 400},
			{"another topic", otherTopic.JSON(), nil, 403},
			{"certificate on another host", elsewhere.JSON(), nil, 403},
			{"altered after signing", altered.JSON(), nil, 403},
			{"stale", x.sns.Notification(sesMsg, now.Add(-2*time.Hour), "2").JSON(), nil, 403},
		}, callback{"genuine", x.sns.Notification(sesMsg, now, "2").JSON(), nil, 200}},
		{"postmark", "postmark@example.net", []callback{
			{"no credentials", pmBody, nil, 401},
			{"wrong password", pmBody, basic(postmarkUser, "guess"), 403},
		}, callback{"genuine", pmBody, basic(postmarkUser, postmarkPassword), 200}},
		{"sendgrid", "sendgrid@example.net", []callback{
			{"unsigned", sgBody, nil, 401},
			{"another key", sgBody, sgHdr(wrongSig, sgTS), 403},
			{"altered after signing", append([]byte("\n"), sgBody...), sgHdr(sgSig, sgTS), 403},
			{"stale", sgBody, sgHdr(staleSig, staleTS), 403},
		}, callback{"genuine", sgBody, sgHdr(sgSig, sgTS), 200}},
		{"mailgun", "mailgun@example.net", []callback{
			{"unsigned", mgRaw, nil, 403},
			{"another key", esptest.SignMailgun(mgRaw, []byte("key-attacker"), now, "mg-token-x"), nil, 403},
			{"stale", esptest.SignMailgun(mgRaw, x.mgKey, now.Add(-time.Hour), "mg-token-y"), nil, 403},
		}, callback{"genuine", mgBody, nil, 200}},
	}
	want := state{events: 1, hard: 1, balance: 100, severity: "hard", party: "reader", reason: "unknown-user", subscribed: store.SubActive}
	for _, p := range providers {
		t.Run(p.provider, func(t *testing.T) {
			em := sent[p.addr]
			before := x.state(em)
			for _, c := range p.forged {
				if code, text := x.post(p.provider, c.body, c.hdr); code != c.code {
					t.Errorf("%s: %d %q, want %d", c.name, code, text, c.code)
				}
				if got := x.state(em); got != before {
					t.Fatalf("%s changed the store: %+v, was %+v", c.name, got, before)
				}
			}
			if code, text := x.post(p.provider, p.genuine.body, p.genuine.hdr); code != 200 {
				t.Fatalf("genuine: %d %q", code, text)
			}
			after := x.state(em)
			if after != want {
				t.Errorf("after the genuine callback: %+v, want %+v (one row, one hard bounce, the credit back)", after, want)
			}
			// Replayed at once (the service's own retry, or someone who
			// captured it): nothing more.
			if code, text := x.post(p.provider, p.genuine.body, p.genuine.hdr); code != 200 {
				t.Errorf("replay: %d %q", code, text)
			}
			if got := x.state(em); got != after {
				t.Errorf("the replay changed the store: %+v, was %+v", got, after)
			}
		})
	}

	// Past the tolerance, SendGrid's and Mailgun's captured callbacks are
	// refused outright.
	x.clk.Advance(11 * time.Minute)
	if code, _ := x.post("sendgrid", sgBody, sgHdr(sgSig, sgTS)); code != 403 {
		t.Errorf("sendgrid replayed after 11 min: %d, want 403", code)
	}
	if code, _ := x.post("mailgun", mgBody, nil); code != 403 {
		t.Errorf("mailgun replayed after 11 min: %d, want 403", code)
	}
	var rows int64
	if err := x.st.DB.Model(&store.InboundEvent{}).Count(&rows).Error; err != nil || rows != 4 {
		t.Errorf("%d inbound_events rows in all (%v), want one per email", rows, err)
	}
}
