// Package esptest signs email services' webhook callbacks the way each
// service does, with keys the test makes, so tests can send feedmail
// genuine, forged and replayed notifications: Amazon SNS messages (RSA,
// SignatureVersion 1 or 2) under a self-signed certificate served by a
// local TLS server that also answers SubscribeURL confirmations,
// SendGrid's signed Event Webhook (ECDSA P-256) and Mailgun's HMAC.
//
// Its signing code is written from the services' documentation, apart
// from package esp's verification, so that a test checks one against the
// other. Test infrastructure: never linked into cmd/feedmail.
package esptest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// Topic is the topic ARN the SNS helper signs for.
const Topic = "arn:aws:sns:us-east-1:123456789012:feedmail-ses"

// SNS is a fake SNS: a signing key, its self-signed certificate served over
// TLS at CertURL, and SubscribeURL confirmations counted.
type SNS struct {
	Key     *rsa.PrivateKey
	Cert    *x509.Certificate
	CertPEM []byte
	Server  *httptest.Server
	// Host matches the TLS server's host (127.0.0.1), as an SNS host
	// pattern; Client trusts its certificate.
	Host   *regexp.Regexp
	Client *http.Client
	// CertFetches and Confirmations count the requests the server had.
	CertFetches, Confirmations atomic.Int64
}

// NewSNS makes the key, a certificate valid from a day before now to a
// year after, and the TLS server; it is closed at cleanup.
func NewSNS(t testing.TB, now time.Time) *SNS {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sns.us-east-1.amazonaws.com"},
		NotBefore: now.Add(-24 * time.Hour), NotAfter: now.Add(365 * 24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	s := &SNS{Key: key, Cert: cert, CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		Host: regexp.MustCompile(`^127\.0\.0\.1$`)}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/SimpleNotificationService-test.pem":
			s.CertFetches.Add(1)
			_, _ = w.Write(s.CertPEM)
		case "/":
			if r.URL.Query().Get("Action") == "ConfirmSubscription" {
				s.Confirmations.Add(1)
				_, _ = w.Write([]byte(`<ConfirmSubscriptionResponse><ConfirmSubscriptionResult><SubscriptionArn>` +
					r.URL.Query().Get("TopicArn") + `:1</SubscriptionArn></ConfirmSubscriptionResult></ConfirmSubscriptionResponse>`))
				return
			}
			http.NotFound(w, r)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.Server.Close)
	s.Client = s.Server.Client()
	return s
}

// CertURL is the SigningCertURL of the messages it signs.
func (s *SNS) CertURL() string { return s.Server.URL + "/SimpleNotificationService-test.pem" }

// Message is an SNS message before signing; Sign fills Signature.
type Message struct {
	Type, MessageID, Token, TopicArn, Subject, Message, Timestamp string
	SignatureVersion, Signature, SigningCertURL, SubscribeURL     string
	UnsubscribeURL                                                string
	HasSubject                                                    bool
}

// Notification is a Notification of message at ts for Topic, signed
// with SignatureVersion version ("1" or "2").
func (s *SNS) Notification(message string, ts time.Time, version string) *Message {
	m := &Message{Type: "Notification", MessageID: fmt.Sprintf("22b80b92-fdea-4c2c-8f9d-%012d", ts.UnixNano()%1e12),
		TopicArn: Topic, Message: message, Timestamp: ts.UTC().Format("2006-01-02T15:04:05.000Z"),
		SignatureVersion: version, SigningCertURL: s.CertURL(),
		UnsubscribeURL: s.Server.URL + "/?Action=Unsubscribe&SubscriptionArn=" + Topic + ":1"}
	s.Sign(m)
	return m
}

// SubscriptionConfirmation is a signed SubscriptionConfirmation at ts.
func (s *SNS) SubscriptionConfirmation(ts time.Time) *Message {
	m := &Message{Type: "SubscriptionConfirmation", MessageID: "165545c9-2a5c-472c-8df2-7ff2be2b3b1b",
		Token:    "2336412f37fb687f5d51e6e241d09c805a5a57b30d712f794cc5f6a988666d92768dd60a747ba6f3beb71854e285d6ad02428b09ceece29417f1f02d609c582afbacc99c583a916b9981dd2728f4ae6fdb82efd087cc3b7849e05798d2d2785c03b0879594eeac82c01f235d0e717736",
		TopicArn: Topic, Message: "You have chosen to subscribe to the topic " + Topic + ".\nTo confirm the subscription, visit the SubscribeURL included in this message.",
		SubscribeURL: s.Server.URL + "/?Action=ConfirmSubscription&TopicArn=" + Topic + "&Token=2336412f37fb",
		Timestamp:    ts.UTC().Format("2006-01-02T15:04:05.000Z"), SignatureVersion: "1", SigningCertURL: s.CertURL()}
	s.Sign(m)
	return m
}

// Sign signs m with s's key by the documented string to sign.
func (s *SNS) Sign(m *Message) { m.Signature = SignSNS(s.Key, m) }

// SignSNS returns the base64 SNS signature of m under key.
func SignSNS(key *rsa.PrivateKey, m *Message) string {
	pairs := [][2]string{{"Message", m.Message}, {"MessageId", m.MessageID}}
	if m.Type == "Notification" {
		if m.HasSubject {
			pairs = append(pairs, [2]string{"Subject", m.Subject})
		}
		pairs = append(pairs, [2]string{"Timestamp", m.Timestamp})
	} else {
		pairs = append(pairs, [2]string{"SubscribeURL", m.SubscribeURL}, [2]string{"Timestamp", m.Timestamp},
			[2]string{"Token", m.Token})
	}
	pairs = append(pairs, [2]string{"TopicArn", m.TopicArn}, [2]string{"Type", m.Type})
	var text string
	for _, p := range pairs {
		text += p[0] + "\n" + p[1] + "\n"
	}
	var sig []byte
	var err error
	if m.SignatureVersion == "2" {
		d := sha256.Sum256([]byte(text))
		sig, err = rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, d[:])
	} else {
		d := sha1.Sum([]byte(text))
		sig, err = rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA1, d[:])
	}
	if err != nil {
		panic(err)
	}
	return base64.StdEncoding.EncodeToString(sig)
}

// JSON is m as SNS POSTs it.
func (m *Message) JSON() []byte {
	o := map[string]string{"Type": m.Type, "MessageId": m.MessageID, "TopicArn": m.TopicArn, "Message": m.Message,
		"Timestamp": m.Timestamp, "SignatureVersion": m.SignatureVersion, "Signature": m.Signature,
		"SigningCertURL": m.SigningCertURL}
	if m.Type == "Notification" {
		o["UnsubscribeURL"] = m.UnsubscribeURL
		if m.HasSubject {
			o["Subject"] = m.Subject
		}
	} else {
		o["Token"], o["SubscribeURL"] = m.Token, m.SubscribeURL
	}
	b, err := json.MarshalIndent(o, "", "  ")
	if err != nil {
		panic(err)
	}
	return b
}

// SendGrid is a SendGrid signing key pair.
type SendGrid struct{ Key *ecdsa.PrivateKey }

// NewSendGrid makes a P-256 key.
func NewSendGrid(t testing.TB) *SendGrid {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &SendGrid{Key: k}
}

// PublicKey is the verification key as SendGrid shows it: base64 DER.
func (s *SendGrid) PublicKey() string {
	der, err := x509.MarshalPKIXPublicKey(&s.Key.PublicKey)
	if err != nil {
		panic(err)
	}
	return base64.StdEncoding.EncodeToString(der)
}

// Sign returns the signature and timestamp headers for body sent at ts.
func (s *SendGrid) Sign(body []byte, ts time.Time) (signature, timestamp string) {
	timestamp = strconv.FormatInt(ts.Unix(), 10)
	d := sha256.Sum256(append([]byte(timestamp), body...))
	sig, err := ecdsa.SignASN1(rand.Reader, s.Key, d[:])
	if err != nil {
		panic(err)
	}
	return base64.StdEncoding.EncodeToString(sig), timestamp
}

// SignMailgun returns body (a Mailgun webhook JSON object) with its
// signature object replaced by one for ts and token under key.
func SignMailgun(body, key []byte, ts time.Time, token string) []byte {
	var o map[string]any
	if err := json.Unmarshal(body, &o); err != nil {
		panic(err)
	}
	stamp := strconv.FormatInt(ts.Unix(), 10)
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(stamp + token))
	o["signature"] = map[string]string{"timestamp": stamp, "token": token, "signature": hex.EncodeToString(mac.Sum(nil))}
	b, err := json.Marshal(o)
	if err != nil {
		panic(err)
	}
	return b
}
