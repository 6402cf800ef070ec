package esp

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
)

// SNS message types.
const (
	SNSNotification             = "Notification"
	SNSSubscriptionConfirmation = "SubscriptionConfirmation"
	SNSUnsubscribeConfirmation  = "UnsubscribeConfirmation"
)

// SNS is one Amazon SNS message as POSTed to an HTTP(S) subscription (or
// sent as the body of an email-json subscription).
type SNS struct {
	Type             string `json:"Type"`
	MessageID        string `json:"MessageId"`
	Token            string `json:"Token"`
	TopicArn         string `json:"TopicArn"`
	Subject          string `json:"Subject"`
	Message          string `json:"Message"`
	Timestamp        string `json:"Timestamp"`
	SignatureVersion string `json:"SignatureVersion"`
	Signature        string `json:"Signature"`
	SigningCertURL   string `json:"SigningCertURL"`
	SubscribeURL     string `json:"SubscribeURL"`
	UnsubscribeURL   string `json:"UnsubscribeURL"`
	// subjectSet: the message has a Subject field (it is signed only
	// then, even when empty).
	subjectSet bool
}

// DecodeSNS reads an SNS message: the first JSON object in b. It is
// ErrMalformed unless it has a known Type, a MessageId, a TopicArn and a
// Timestamp.
func DecodeSNS(b []byte) (*SNS, error) {
	i := bytes.IndexByte(b, '{')
	if i < 0 {
		return nil, fmt.Errorf("%w: no JSON object", ErrMalformed)
	}
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(b[i:]))
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%w: SNS JSON: %v", ErrMalformed, err)
	}
	var m SNS
	fields := map[string]*string{"Type": &m.Type, "MessageId": &m.MessageID, "Token": &m.Token, "TopicArn": &m.TopicArn,
		"Subject": &m.Subject, "Message": &m.Message, "Timestamp": &m.Timestamp, "SignatureVersion": &m.SignatureVersion,
		"Signature": &m.Signature, "SigningCertURL": &m.SigningCertURL, "SubscribeURL": &m.SubscribeURL,
		"UnsubscribeURL": &m.UnsubscribeURL}
	for name, dst := range fields {
		v, ok := raw[name]
		if !ok || string(v) == "null" {
			continue
		}
		if err := json.Unmarshal(v, dst); err != nil {
			return nil, fmt.Errorf("%w: SNS field %s is not a string", ErrMalformed, name)
		}
		if name == "Subject" {
			m.subjectSet = true
		}
	}
	switch m.Type {
	case SNSNotification, SNSSubscriptionConfirmation, SNSUnsubscribeConfirmation:
	default:
		return nil, fmt.Errorf("%w: SNS message type %q", ErrMalformed, m.Type)
	}
	if m.MessageID == "" || m.TopicArn == "" || m.Timestamp == "" {
		return nil, fmt.Errorf("%w: SNS message without MessageId, TopicArn or Timestamp", ErrMalformed)
	}
	return &m, nil
}

// StringToSign is the canonical text SNS signs: for a notification
// Message, MessageId, Subject (when present), Timestamp, TopicArn and
// Type; for a (un)subscription confirmation Message, MessageId,
// SubscribeURL, Timestamp, Token, TopicArn and Type; each as its name, a
// newline, its value and a newline.
func (m *SNS) StringToSign() string {
	var b strings.Builder
	add := func(k, v string) { b.WriteString(k + "\n" + v + "\n") }
	add("Message", m.Message)
	add("MessageId", m.MessageID)
	if m.Type == SNSNotification {
		if m.subjectSet {
			add("Subject", m.Subject)
		}
	} else {
		add("SubscribeURL", m.SubscribeURL)
	}
	add("Timestamp", m.Timestamp)
	if m.Type != SNSNotification {
		add("Token", m.Token)
	}
	add("TopicArn", m.TopicArn)
	add("Type", m.Type)
	return b.String()
}

// CertSource gives the certificate at an SNS SigningCertURL (which the
// verifier has checked first). Implementations fetch and cache it.
type CertSource interface {
	Certificate(ctx context.Context, certURL string) (*x509.Certificate, error)
}

// ErrCertUnavailable: the signing certificate could not be had (network,
// the host's answer): trying later may work.
var ErrCertUnavailable = errors.New("signing certificate unavailable")

// DefaultSNSHost is the host an SNS SigningCertURL and SubscribeURL must
// have: sns.<region>.amazonaws.com.
var DefaultSNSHost = regexp.MustCompile(`^sns\.[a-z0-9-]+\.amazonaws\.com$`)

// Tolerances of signed timestamps. SNS signs a message once, when it is
// published, and retries it with the same Timestamp; its HTTP delivery
// policies retry for at most an hour, so a message older than that (or
// from more than FutureSkew ahead, a clock that is off) is refused. The
// effect of a message is recorded once anyway, so a replay inside the
// window changes nothing.
const (
	SNSTolerance = time.Hour
	FutureSkew   = 5 * time.Minute
)

// topicARNRe is the form of an SNS topic ARN.
var topicARNRe = regexp.MustCompile(`^arn:aws(-[a-z]+)*:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]{1,256}(\.fifo)?$`)

// ValidTopicARN reports whether s is an SNS topic ARN.
func ValidTopicARN(s string) bool { return topicARNRe.MatchString(s) }

// SNSVerifier checks that an SNS message is SNS's, for a topic the
// operator configured.
type SNSVerifier struct {
	Topics []string       // accepted topic ARNs (FEEDMAIL_SES_TOPIC_ARNS)
	Host   *regexp.Regexp // allowed host of certificate and subscribe URLs; nil: DefaultSNSHost
	Certs  CertSource
	// Tolerance of the Timestamp's age; 0: SNSTolerance.
	Tolerance time.Duration
}

// CheckURL returns the parsed u when it is an https URL without user
// information on an allowed SNS host, else an ErrForged error.
func (v *SNSVerifier) CheckURL(u string) (*url.URL, error) {
	host := v.Host
	if host == nil {
		host = DefaultSNSHost
	}
	p, err := url.Parse(u)
	if err != nil || p.Scheme != "https" || p.User != nil || p.Opaque != "" || !host.MatchString(strings.ToLower(p.Hostname())) {
		return nil, fmt.Errorf("%w: %q is not an https URL on an SNS host", ErrForged, clipURL(u))
	}
	return p, nil
}

// clipURL shortens a URL for an error message.
func clipURL(u string) string {
	if len(u) > 120 {
		return u[:120] + "…"
	}
	return u
}

// Verify checks m at time now: a configured topic, a signing certificate
// from an SNS host, a Timestamp inside the tolerance, a valid signature
// (SignatureVersion 1: SHA1withRSA, 2: SHA256withRSA) of StringToSign
// under that certificate, and for a confirmation a SubscribeURL on an SNS
// host. The certificate is trusted because it came over verified TLS from
// an SNS host: SNS publishes only the leaf, so no chain is checked. Errors
// wrap ErrForged, ErrStale, ErrUnauthenticated (no signature) or
// ErrCertUnavailable.
func (v *SNSVerifier) Verify(ctx context.Context, m *SNS, now time.Time) error {
	if !slices.Contains(v.Topics, m.TopicArn) {
		return fmt.Errorf("%w: topic %q is not configured", ErrForged, m.TopicArn)
	}
	if m.Signature == "" || m.SigningCertURL == "" {
		return fmt.Errorf("%w: SNS message without a signature", ErrUnauthenticated)
	}
	var h crypto.Hash
	switch m.SignatureVersion {
	case "1":
		h = crypto.SHA1
	case "2":
		h = crypto.SHA256
	default:
		return fmt.Errorf("%w: SignatureVersion %q", ErrForged, m.SignatureVersion)
	}
	if _, err := v.CheckURL(m.SigningCertURL); err != nil {
		return err
	}
	if m.Type != SNSNotification {
		if _, err := v.CheckURL(m.SubscribeURL); err != nil {
			return err
		}
	}
	ts, err := time.Parse(time.RFC3339Nano, m.Timestamp)
	if err != nil {
		return fmt.Errorf("%w: Timestamp %q", ErrMalformed, m.Timestamp)
	}
	tol := v.Tolerance
	if tol <= 0 {
		tol = SNSTolerance
	}
	if now.Sub(ts) > tol || ts.Sub(now) > FutureSkew {
		return fmt.Errorf("%w: SNS Timestamp %s at %s", ErrStale, m.Timestamp, now.UTC().Format(time.RFC3339))
	}
	sig, err := base64.StdEncoding.DecodeString(m.Signature)
	if err != nil {
		return fmt.Errorf("%w: signature is not base64", ErrForged)
	}
	if v.Certs == nil {
		return fmt.Errorf("%w: no certificate source", ErrCertUnavailable)
	}
	cert, err := v.Certs.Certificate(ctx, m.SigningCertURL)
	if err != nil {
		if errors.Is(err, ErrForged) {
			return err
		}
		return fmt.Errorf("%w: %w", ErrCertUnavailable, err)
	}
	if now.Before(cert.NotBefore) || now.After(cert.NotAfter) {
		return fmt.Errorf("%w: signing certificate not valid at %s", ErrForged, now.UTC().Format(time.RFC3339))
	}
	pub, ok := cert.PublicKey.(*rsa.PublicKey)
	if !ok {
		return fmt.Errorf("%w: signing certificate has no RSA key", ErrForged)
	}
	if err := rsa.VerifyPKCS1v15(pub, h, digest(h, m.StringToSign()), sig); err != nil {
		return fmt.Errorf("%w: SNS signature does not verify", ErrForged)
	}
	return nil
}

// digest hashes s with h (SHA-1 or SHA-256).
func digest(h crypto.Hash, s string) []byte {
	if h == crypto.SHA1 {
		d := sha1.Sum([]byte(s)) // SignatureVersion 1: SNS's choice, not ours
		return d[:]
	}
	d := sha256.Sum256([]byte(s))
	return d[:]
}

// ParsePEMCertificate returns the first certificate of a PEM document
// (what a SigningCertURL serves).
func ParsePEMCertificate(b []byte) (*x509.Certificate, error) {
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			return nil, fmt.Errorf("%w: no certificate in the PEM document", ErrForged)
		}
		if blk.Type == "CERTIFICATE" {
			c, err := x509.ParseCertificate(blk.Bytes)
			if err != nil {
				return nil, fmt.Errorf("%w: certificate: %v", ErrForged, err)
			}
			return c, nil
		}
	}
}
