package mailer

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"

	"github.com/emersion/go-msgauth/dkim"
	"github.com/wneessen/go-mail"
)

// DKIMSignedHeaders are the header fields every DKIM signature covers
// (h=), in this order. Fields a message lacks are listed too: a verifier
// counts them as empty, so adding one later (a second List-Unsubscribe, a
// Reply-To) breaks the signature. RFC 8058 wants List-Unsubscribe and
// List-Unsubscribe-Post covered for one-click unsubscribe, RFC 9477
// CFBL-Address (and mailbox providers Feedback-ID) covered to be trusted.
var DKIMSignedHeaders = []string{
	"From", "To", "Cc", "Reply-To", "Subject", "Date", "Message-ID",
	"MIME-Version", "Content-Type", "Content-Transfer-Encoding",
	"List-Id", "List-Unsubscribe", "List-Unsubscribe-Post", "Auto-Submitted",
	"Feedback-ID", "CFBL-Address",
}

// minRSABits is the smallest RSA key DKIM signing accepts (RFC 8301 asks
// for 1024 at least; mailbox providers want 2048).
const minRSABits = 2048

// DKIMSigner signs messages for one domain and selector with one key,
// relaxed/relaxed, rsa-sha256 or ed25519-sha256. Its configuration is
// immutable; it is safe for concurrent use.
type DKIMSigner struct {
	domain, selector string
	key              crypto.Signer
	// verified is set once a signed message verified against the
	// public key; verifies counts those full verifications.
	verified atomic.Bool
	verifies atomic.Int64
}

// LoadDKIMSigner reads the private key in keyFile and returns a signer
// for domain and selector. Errors say what is wrong with the file in one
// line (missing, unreadable, not PEM, encrypted, wrong type, RSA too short).
func LoadDKIMSigner(domain, selector, keyFile string) (*DKIMSigner, error) {
	data, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, err // "open <file>: <why>"
	}
	key, err := ParseDKIMKey(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", keyFile, err)
	}
	return NewDKIMSigner(domain, selector, key)
}

// ParseDKIMKey reads a PEM private key usable for DKIM: RSA of at least
// 2048 bits (PKCS#1 "RSA PRIVATE KEY" or PKCS#8 "PRIVATE KEY") or Ed25519
// (PKCS#8). Other blocks in the file before the key (comments, parameters)
// are skipped; certificates and public keys are not keys.
func ParseDKIMKey(data []byte) (crypto.Signer, error) {
	rest := data
	sawPEM := false
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		sawPEM = true
		if strings.Contains(b.Headers["Proc-Type"], "ENCRYPTED") || b.Type == "ENCRYPTED PRIVATE KEY" {
			return nil, errors.New("the key is encrypted: give an unencrypted PEM key (e.g. openssl pkey -in enc.pem -out key.pem)")
		}
		switch b.Type {
		case "RSA PRIVATE KEY":
			k, err := x509.ParsePKCS1PrivateKey(b.Bytes)
			if err != nil {
				return nil, fmt.Errorf("RSA PRIVATE KEY block: %w", err)
			}
			return checkDKIMKey(k)
		case "PRIVATE KEY":
			k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
			if err != nil {
				return nil, fmt.Errorf("PRIVATE KEY block: %w", err)
			}
			return checkDKIMKey(k)
		case "EC PRIVATE KEY":
			return nil, errors.New("EC keys cannot sign DKIM: use RSA (2048 bits or more) or Ed25519")
		case "PUBLIC KEY", "RSA PUBLIC KEY", "CERTIFICATE":
			return nil, fmt.Errorf("the file holds a %s, not a private key", strings.ToLower(b.Type))
		}
	}
	if sawPEM {
		return nil, errors.New("no private key in the PEM file (want RSA PRIVATE KEY or PRIVATE KEY)")
	}
	return nil, errors.New("not a PEM file (want -----BEGIN PRIVATE KEY----- or -----BEGIN RSA PRIVATE KEY-----)")
}

// checkDKIMKey accepts RSA keys of minRSABits or more and Ed25519 keys.
func checkDKIMKey(k any) (crypto.Signer, error) {
	switch k := k.(type) {
	case *rsa.PrivateKey:
		if bits := k.N.BitLen(); bits < minRSABits {
			return nil, fmt.Errorf("RSA key of %d bits: DKIM signing needs %d or more", bits, minRSABits)
		}
		return k, nil
	case ed25519.PrivateKey:
		return k, nil
	}
	return nil, fmt.Errorf("%T keys cannot sign DKIM: use RSA (2048 bits or more) or Ed25519", k)
}

// NewDKIMSigner returns a signer for domain (d=) and selector (s=) with key,
// which must pass ParseDKIMKey's rules.
func NewDKIMSigner(domain, selector string, key crypto.Signer) (*DKIMSigner, error) {
	domain = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(domain), "."))
	selector = strings.TrimSpace(selector)
	if domain == "" || selector == "" {
		return nil, errors.New("DKIM: domain and selector are required")
	}
	if _, err := checkDKIMKey(key); err != nil {
		return nil, fmt.Errorf("DKIM key: %w", err)
	}
	return &DKIMSigner{domain: domain, selector: selector, key: key}, nil
}

// Domain returns the signing domain (d=).
func (d *DKIMSigner) Domain() string { return d.domain }

// DNSRecord returns the name and value of the TXT record that publishes
// the public key: "<selector>._domainkey.<domain>" and
// "v=DKIM1; k=rsa; p=<base64>" (k=ed25519 for Ed25519 keys, RFC 8463).
func (d *DKIMSigner) DNSRecord() (name, value string) {
	name = d.selector + "._domainkey." + d.domain
	switch pub := d.key.Public().(type) {
	case ed25519.PublicKey:
		return name, "v=DKIM1; k=ed25519; p=" + base64.StdEncoding.EncodeToString(pub)
	default:
		der, _ := x509.MarshalPKIXPublicKey(pub)
		return name, "v=DKIM1; k=rsa; p=" + base64.StdEncoding.EncodeToString(der)
	}
}

// Sign adds a DKIM-Signature header to m (replacing one added before),
// computed over m as Render serializes it, then checks that m renders
// again to what was signed: the signature is computed over one rendering
// and the transport writes another, so both must agree on every signed
// byte (sameSigned). The first message a signer signs is also verified
// against its own public key, which proves the key, the header's form and
// the canonicalization once; after that the comparison is enough, as
// equal input gives an equal, valid signature.
func (d *DKIMSigner) Sign(m *mail.Msg) error {
	raw, err := renderSized(m, renderGuess)
	if err != nil {
		return err
	}
	raw = withoutDKIMHeader(raw)
	s, err := dkim.NewSigner(&dkim.SignOptions{
		Domain: d.domain, Selector: d.selector, Signer: d.key,
		HeaderCanonicalization: dkim.CanonicalizationRelaxed, BodyCanonicalization: dkim.CanonicalizationRelaxed,
		HeaderKeys: DKIMSignedHeaders,
	})
	if err != nil {
		return fmt.Errorf("dkim: %w", err)
	}
	if _, err := s.Write(raw); err != nil {
		_ = s.Close()
		return fmt.Errorf("dkim: %w", err)
	}
	if err := s.Close(); err != nil {
		return fmt.Errorf("dkim: %w", err)
	}
	name, value, _ := strings.Cut(s.Signature(), ":")
	m.SetGenHeaderPreformatted(mail.Header(name), strings.TrimSpace(value))
	return d.check(m, raw)
}

// renderGuess is the buffer a first rendering starts with: an item email
// of a few KB of post is 10–20 KB once encoded. dkimHeaderRoom is what
// a DKIM-Signature field adds (an RSA-4096 one is under 1 KB).
const (
	renderGuess    = 16 << 10
	dkimHeaderRoom = 1 << 10
)

// check renders m again and fails unless it is signed as raw was
// (sameSigned); the signer's first message is also verified with its
// public key.
func (d *DKIMSigner) check(m *mail.Msg, signed []byte) error {
	raw, err := renderSized(m, len(signed)+dkimHeaderRoom)
	if err != nil {
		return err
	}
	if !sameSigned(withoutDKIMHeader(raw), signed) {
		return errors.New("dkim: the message renders differently each time: the rendering is not stable")
	}
	if d.verified.Load() {
		return nil
	}
	d.verifies.Add(1)
	_, want := d.DNSRecord()
	vs, err := dkim.VerifyWithOptions(bytes.NewReader(raw), &dkim.VerifyOptions{
		LookupTXT: func(string) ([]string, error) { return []string{want}, nil },
	})
	if err != nil {
		return fmt.Errorf("dkim: check the signature: %w", err)
	}
	if len(vs) != 1 || vs[0].Err != nil {
		return fmt.Errorf("dkim: the signed message does not verify (%v)", vs)
	}
	d.verified.Store(true)
	return nil
}

// signingTransport signs every message, then hands it to the transport
// it wraps.
type signingTransport struct {
	Transport
	dkim *DKIMSigner
}

// WithDKIM returns t signing every message with d before delivering it, so
// SMTP and Maildir get the same signed mail. A message that cannot be
// signed is not delivered: its result is a temporary failure (the cause is
// in this process, and an unsigned copy could fail DMARC). A nil d returns
// t unchanged.
func WithDKIM(t Transport, d *DKIMSigner) Transport {
	if d == nil {
		return t
	}
	return &signingTransport{Transport: t, dkim: d}
}

// Send signs msgs and delivers those that could be signed.
func (s *signingTransport) Send(ctx context.Context, msgs []*mail.Msg) []error {
	out := make([]error, len(msgs))
	s.SendEach(ctx, msgs, func(i int, err error) { out[i] = err })
	return out
}

// SendEach signs msgs and delivers those that could be signed by the
// transport it wraps, reporting each result as that transport does
// ([EachSender]).
func (s *signingTransport) SendEach(ctx context.Context, msgs []*mail.Msg, report func(i int, err error)) {
	var send []*mail.Msg
	var at []int
	for i, m := range msgs {
		if m == nil {
			send, at = append(send, m), append(at, i)
			continue
		}
		if err := s.dkim.Sign(m); err != nil {
			report(i, temporary(err, "not sent: %v", err))
			continue
		}
		send, at = append(send, m), append(at, i)
	}
	if len(send) > 0 {
		SendEach(ctx, s.Transport, send, func(j int, err error) { report(at[j], err) })
	}
}
