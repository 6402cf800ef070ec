// Package token makes and checks the HMAC-signed tokens that go into links
// (confirm, unsubscribe, account, digest unsubscribe, WebSub callbacks), so
// that no link carries a raw database id anyone could change. It knows no
// database and no routes: callers give it the purpose and the subject.
//
// A token binds a purpose, a subject (the id of the thing the link acts on)
// and an optional expiry under a key only the server knows. Layout, before
// unpadded URL-safe base64 (RFC 4648 §5):
//
//	version (1 byte, = 1; 2 when the token carries its issue time)
//	purpose code (1 byte; 0 = the purpose follows as length byte + bytes)
//	subject (signed varint)
//	expiry (unsigned varint, Unix seconds; 0 = never)
//	issued (version 2 only: unsigned varint, Unix seconds)
//	MAC (16 bytes: HMAC-SHA-256 truncated, over a domain label and all of the above)
//
// An unsubscribe token for subject 12345 without expiry is 30 characters.
// Sixteen MAC bytes (128 bits) are far beyond what anyone can forge online.
//
// Verify checks, in order: well-formed (ErrMalformed), MAC (ErrBadSignature),
// purpose (ErrWrongPurpose), expiry (ErrExpired). So a genuine token used
// for the wrong purpose says so, while any edit says "bad signature".
package token

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Errors of NewSigner and Verify. Test with errors.Is.
var (
	ErrMalformed    = errors.New("malformed token")
	ErrBadSignature = errors.New("token signature does not match")
	ErrWrongPurpose = errors.New("token is for another purpose")
	ErrExpired      = errors.New("token expired")
	ErrShortSecret  = errors.New("token secret too short")
)

// Purposes. A token signed for one is refused for every other.
const (
	Confirm           = "confirm"            // confirm a subscription (subject: subscription id)
	Unsubscribe       = "unsubscribe"        // end one subscription (subject: subscription id)
	Account           = "account"            // magic link to the account page (subject: user id)
	DigestUnsubscribe = "digest-unsubscribe" // stop one digest (subject: digest id)
	WebSub            = "websub"             // WebSub callback URL (subject: feed id)
	Return            = "return"             // envelope sender of one email, where its bounces go (subject: outbox id)
	MailUnsubscribe   = "mail-unsubscribe"   // List-Unsubscribe mailto of one email (subject: outbox id)
	Follow            = "follow"             // follow a feed's new address: accept an offer (subject: reader move id)
	UndoMove          = "undo-move"          // move back to a feed's old address (subject: reader move id)
)

// MinSecretLen is the shortest secret NewSigner accepts, in bytes.
const MinSecretLen = 16

// MaxLen is the longest token string Verify looks at; anything longer is
// malformed without being decoded.
const MaxLen = 512

const (
	version = 1
	// versionIssued is the layout that adds the issue time (SignIssued).
	versionIssued = 2
	macLen        = 16
	// maxExpiry keeps time.Unix far from overflow (year ~146 billion).
	maxExpiry = 1 << 62
	// macLabel separates these MACs from any other use of the same secret.
	macLabel = "feedmail/token/v1\x00"
)

// purposeCode maps the known purposes to one byte; 0 means "spelled out".
func purposeCode(p string) byte {
	switch p {
	case Confirm:
		return 1
	case Unsubscribe:
		return 2
	case Account:
		return 3
	case DigestUnsubscribe:
		return 4
	case WebSub:
		return 5
	case Return:
		return 6
	case MailUnsubscribe:
		return 7
	}
	return 0
}

func purposeName(c byte) (string, bool) {
	switch c {
	case 1:
		return Confirm, true
	case 2:
		return Unsubscribe, true
	case 3:
		return Account, true
	case 4:
		return DigestUnsubscribe, true
	case 5:
		return WebSub, true
	case 6:
		return Return, true
	case 7:
		return MailUnsubscribe, true
	}
	return "", false
}

var encoding = base64.RawURLEncoding.Strict()

// addrEncoding spells tokens that go into an email address's local part:
// lower-case base32 without padding, because mail systems may change the
// case of a local part on the way back.
var addrEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// Signer signs and verifies tokens with one secret. It is immutable and safe
// for concurrent use.
type Signer struct {
	secret []byte
}

// NewSigner returns a Signer for secret (copied), which must be at least
// MinSecretLen bytes (ErrShortSecret): FEEDMAIL_SECRET, or the one generated
// and stored on first run.
func NewSigner(secret []byte) (*Signer, error) {
	if len(secret) < MinSecretLen {
		return nil, fmt.Errorf("%w: %d bytes, want at least %d", ErrShortSecret, len(secret), MinSecretLen)
	}
	return &Signer{secret: append([]byte(nil), secret...)}, nil
}

// Sign returns a token for purpose and subject that Verify accepts until
// expires (exclusive). The zero time means it never expires. The expiry is
// kept in whole seconds, rounded down (never later than asked); an expiry at
// or before 1970 makes a token that is already expired. Purposes other than
// the constants above work too but make longer tokens; a purpose longer than
// 255 bytes is cut to 255.
func (s *Signer) Sign(purpose string, subject int64, expires time.Time) string {
	return encoding.EncodeToString(s.signRaw(purpose, subject, expires, time.Time{}))
}

// SignAddress is Sign spelled for an email address's local part (e.g.
// the extension of bounces+TOKEN@domain): lower-case letters and digits
// only, 36 characters for an outbox id without expiry. VerifyAddress
// checks it, whatever case it comes back in.
func (s *Signer) SignAddress(purpose string, subject int64, expires time.Time) string {
	return addrEncoding.EncodeToString(s.signRaw(purpose, subject, expires, time.Time{}))
}

// signRaw is the token's bytes; a non-zero issued makes a version 2 token.
func (s *Signer) signRaw(purpose string, subject int64, expires, issued time.Time) []byte {
	if len(purpose) > 255 {
		purpose = purpose[:255]
	}
	var exp uint64
	if !expires.IsZero() {
		exp = 1
		if u := expires.Unix(); u > 1 {
			exp = min(uint64(u), maxExpiry)
		}
	}
	b := make([]byte, 0, 3+len(purpose)+3*binary.MaxVarintLen64+macLen)
	if issued.IsZero() {
		b = append(b, version)
	} else {
		b = append(b, versionIssued)
	}
	if c := purposeCode(purpose); c != 0 {
		b = append(b, c)
	} else {
		b = append(b, 0, byte(len(purpose)))
		b = append(b, purpose...)
	}
	b = binary.AppendVarint(b, subject)
	b = binary.AppendUvarint(b, exp)
	if !issued.IsZero() {
		b = binary.AppendUvarint(b, uint64(max(issued.Unix(), 0)))
	}
	return append(b, s.mac(b)...)
}

// Verify checks tok for purpose at now and returns its subject. Errors wrap
// ErrMalformed, ErrBadSignature, ErrWrongPurpose or ErrExpired, checked in
// that order. A token is expired from its expiry instant on.
func (s *Signer) Verify(tok, purpose string, now time.Time) (subject int64, err error) {
	c, err := s.VerifyClaims(tok, purpose, now)
	return c.Subject, err
}

// VerifyAddress checks a token made by SignAddress, in any case, like
// Verify.
func (s *Signer) VerifyAddress(tok, purpose string, now time.Time) (subject int64, err error) {
	if tok == "" {
		return 0, fmt.Errorf("%w: empty", ErrMalformed)
	}
	if len(tok) > MaxLen {
		return 0, fmt.Errorf("%w: %d characters", ErrMalformed, len(tok))
	}
	tok = strings.ToLower(tok)
	raw, err := addrEncoding.DecodeString(tok)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if addrEncoding.EncodeToString(raw) != tok {
		return 0, fmt.Errorf("%w: not in canonical form", ErrMalformed)
	}
	c, err := s.verifyRaw(raw, purpose, now)
	return c.Subject, err
}

// verifyRaw checks decoded token bytes (see Verify) and returns what they
// say.
func (s *Signer) verifyRaw(raw []byte, purpose string, now time.Time) (Claims, error) {
	var c Claims
	if len(raw) < 2+2+macLen {
		return c, fmt.Errorf("%w: too short", ErrMalformed)
	}
	body, sum := raw[:len(raw)-macLen], raw[len(raw)-macLen:]
	if body[0] != version && body[0] != versionIssued {
		return c, fmt.Errorf("%w: unknown version %d", ErrMalformed, body[0])
	}
	rest := body[2:]
	var got string
	if body[1] == 0 {
		if len(rest) < 1 || len(rest) < 1+int(rest[0]) {
			return c, fmt.Errorf("%w: truncated purpose", ErrMalformed)
		}
		got, rest = string(rest[1:1+int(rest[0])]), rest[1+int(rest[0]):]
	} else {
		var ok bool
		if got, ok = purposeName(body[1]); !ok {
			return c, fmt.Errorf("%w: unknown purpose code %d", ErrMalformed, body[1])
		}
	}
	subject, n := binary.Varint(rest)
	if n <= 0 {
		return c, fmt.Errorf("%w: bad subject", ErrMalformed)
	}
	rest = rest[n:]
	exp, n := binary.Uvarint(rest)
	if n <= 0 || (body[0] == version && n != len(rest)) {
		return c, fmt.Errorf("%w: bad expiry", ErrMalformed)
	}
	rest = rest[n:]
	var issued uint64
	if body[0] == versionIssued {
		if issued, n = binary.Uvarint(rest); n <= 0 || n != len(rest) || issued > maxExpiry {
			return c, fmt.Errorf("%w: bad issue time", ErrMalformed)
		}
	}
	if !hmac.Equal(sum, s.mac(body)) {
		return c, ErrBadSignature
	}
	if got != purpose {
		return c, fmt.Errorf("%w: made for %q, used for %q", ErrWrongPurpose, got, purpose)
	}
	if exp > maxExpiry {
		// Sign never makes this; only a signer bug could. Refuse, don't overflow.
		return c, fmt.Errorf("%w: expiry out of range", ErrMalformed)
	}
	if exp != 0 && !now.Before(time.Unix(int64(exp), 0)) {
		return c, fmt.Errorf("%w: at %s", ErrExpired, time.Unix(int64(exp), 0).UTC().Format(time.RFC3339))
	}
	c.Subject = subject
	if exp != 0 {
		c.Expires = time.Unix(int64(exp), 0)
	}
	if body[0] == versionIssued {
		c.Issued = time.Unix(int64(issued), 0)
	}
	return c, nil
}

func (s *Signer) mac(body []byte) []byte {
	m := hmac.New(sha256.New, s.secret)
	m.Write([]byte(macLabel))
	m.Write(body)
	return m.Sum(nil)[:macLen]
}

// deriveLabel separates derived keys from token MACs and from each other.
const deriveLabel = "feedmail/derive/v1\x00"

// Derive returns a 32-byte key for another use of the same secret, named
// by label (e.g. "message-id"): HMAC-SHA-256 of the label under the
// secret. Keys for different labels are unrelated, none reveals the secret,
// and none can make or check a token.
func (s *Signer) Derive(label string) []byte {
	m := hmac.New(sha256.New, s.secret)
	m.Write([]byte(deriveLabel))
	m.Write([]byte(label))
	return m.Sum(nil)
}
