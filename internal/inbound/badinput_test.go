package inbound

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
)

// dsn returns a minimal DSN with the given outer To and original
// Return-Path.
func dsn(to, returnPath string) string {
	return "From: MAILER-DAEMON@mx.example.net\nTo: " + to + "\n" +
		"Subject: Undelivered Mail Returned to Sender\n" +
		"Content-Type: multipart/report; report-type=delivery-status; boundary=B\n\n" +
		"--B\nContent-Type: message/delivery-status\n\n" +
		"Reporting-MTA: dns; mx.example.net\n\n" +
		"Final-Recipient: rfc822; x@example.net\nAction: failed\nStatus: 5.1.1\n\n" +
		"--B\nContent-Type: text/rfc822-headers\n\n" +
		"Return-Path: <" + returnPath + ">\nMessage-ID: <m1@example.org>\n\n--B--\n"
}

// nested returns a message with depth nested multiparts around a DSN part.
func nested(depth int) string {
	var b strings.Builder
	b.WriteString("From: MAILER-DAEMON@mx.example.net\nTo: bounces+DEEP@mail.example.org\n")
	b.WriteString("Content-Type: multipart/mixed; boundary=b" + itoa(0) + "\n\n")
	for i := range depth {
		b.WriteString("--b" + itoa(i) + "\nContent-Type: multipart/mixed; boundary=b" + itoa(i+1) + "\n\n")
	}
	b.WriteString("--b" + itoa(depth) + "\nContent-Type: message/delivery-status\n\n" +
		"Final-Recipient: rfc822; x@example.net\nAction: failed\nStatus: 5.1.1\n\n")
	for i := depth; i >= 0; i-- {
		b.WriteString("--b" + itoa(i) + "--\n")
	}
	return b.String()
}

func itoa(i int) string { return strings.Repeat("x", i/26) + string(rune('a'+i%26)) }

func TestParseBadInput(t *testing.T) {
	garbage := make([]byte, 64<<10)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range garbage {
		garbage[i] = byte(rng.UintN(256))
	}
	hard, err := os.ReadFile("testdata/postfix-dsn-hard.eml")
	if err != nil {
		t.Fatal(err)
	}
	truncated := string(hard[:bytes.Index(hard, []byte("Status: 5.1.1"))])
	tests := []struct {
		name     string
		in       string
		kind     Kind
		severity Severity
		reason   string
		tokens   []string
	}{
		{"empty", "", KindUnknown, "", "empty", nil},
		{"blank lines", "\r\n\r\n\n", KindUnknown, "", "empty", nil},
		{"binary garbage", string(garbage), KindUnknown, "", "not a message", nil},
		{"leading blank lines", "\r\n\n" + dsn("bounces+LB@mail.example.org", ""), KindBounce, SeverityHard, "", []string{"LB"}},
		{"header only", "Subject: hello", KindUnknown, "", "no known format", nil},
		{"continuation first", " folded: x\n\nbody", KindUnknown, "", "not a message", nil},
		{"nested 100 deep", nested(100), KindUnknown, "", "MIME nesting too deep", []string{"DEEP"}},
		{"nested 5 deep", nested(5), KindBounce, SeverityHard, "", []string{"DEEP"}},
		{"multipart without boundary",
			"From: a@example.com\nSubject: hi\nContent-Type: multipart/report; report-type=delivery-status\n\n" +
				"Final-Recipient: rfc822; x@example.net\nAction: failed\n", KindUnknown, "", "no known format", nil},
		{"multipart without boundary from a daemon",
			"From: MAILER-DAEMON@mx.example.net\nSubject: Undelivered Mail Returned to Sender\n" +
				"Content-Type: multipart/report; report-type=delivery-status\n\nbroken\n", KindBounce, SeverityNone, "", nil},
		{"base64 garbage",
			"From: a@example.com\nSubject: hi\nContent-Type: multipart/report; boundary=Z\n\n--Z\n" +
				"Content-Type: message/delivery-status\nContent-Transfer-Encoding: base64\n\n!!!@@@###$$$%%%^^^\n--Z--\n",
			KindUnknown, "", "no known format", nil},
		{"quoted-printable garbage",
			"From: a@example.com\nSubject: hi\nContent-Transfer-Encoding: quoted-printable\n\n=ZZ=\n=",
			KindUnknown, "", "no known format", nil},
		{"read receipt",
			"From: a@example.com\nSubject: Read: news\nContent-Type: multipart/report; report-type=disposition-notification; boundary=R\n\n" +
				"--R\nContent-Type: message/disposition-notification\n\nFinal-Recipient: rfc822; a@example.com\nDisposition: manual-action/MDN-sent-manually; displayed\n\n--R--\n",
			KindUnknown, "", "disposition notification", nil},
		{"truncated DSN", truncated, KindBounce, SeverityHard, "", []string{"TESTTOKEN"}},
		{"DSN without token", dsn("postmaster@mail.example.org", "news@example.org"), KindBounce, SeverityHard, "", nil},
		{"DSN with empty token", dsn("bounces+@mail.example.org", "bounces+@mail.example.org"), KindBounce, SeverityHard, "", nil},
		{"DSN with token of another domain",
			dsn("bounces+FORGED@mail.example.org.evil.test", "bounces+FORGED@evil.test"), KindBounce, SeverityHard, "", nil},
		{"DSN with forged token", dsn("bounces+FORGED@mail.example.org", "xbounces+OTHER@mail.example.org"),
			KindBounce, SeverityHard, "", []string{"FORGED"}},
		{"mbox From line", "From MAILER-DAEMON Wed Nov 25 10:00:00 2026\n" + dsn("bounces+T1@mail.example.org", ""),
			KindBounce, SeverityHard, "", []string{"T1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(strings.NewReader(tt.in), Options{BounceAddress: "bounces@mail.example.org"})
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got.Kind != tt.kind || got.Severity != tt.severity || got.Reason != tt.reason {
				t.Errorf("got kind=%q severity=%q reason=%q, want %q %q %q",
					got.Kind, got.Severity, got.Reason, tt.kind, tt.severity, tt.reason)
			}
			if !slices.Equal(got.Tokens, tt.tokens) {
				t.Errorf("Tokens = %q, want %q", got.Tokens, tt.tokens)
			}
		})
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// zeros is an endless source of 'a' bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	return len(p), nil
}

func TestParseTooLarge(t *testing.T) {
	head := "From: MAILER-DAEMON@mx.example.net\nTo: bounces+BIG@mail.example.org\nSubject: failure notice\n\n"
	for _, tt := range []struct {
		name  string
		max   int64
		size  int64
		limit int64
	}{
		{"20 MB against the default", 0, 20 << 20, DefaultMaxBytes},
		{"small limit", 1000, 5000, 1000},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cr := &countingReader{r: io.MultiReader(strings.NewReader(head), io.LimitReader(zeros{}, tt.size))}
			got, err := Parse(cr, Options{MaxBytes: tt.max, BounceAddress: "bounces@mail.example.org"})
			if err != nil {
				t.Fatal(err)
			}
			if got.Kind != KindUnknown || got.Reason != "too large" || !slices.Equal(got.Tokens, []string{"BIG"}) {
				t.Errorf("got %+v, want unknown, too large, the outer token", got)
			}
			if cr.n != tt.limit+1 {
				t.Errorf("read %d bytes, want the limit + 1 = %d", cr.n, tt.limit+1)
			}
		})
	}
	// Exactly at the limit is not too large.
	msg := head + "x"
	got, err := Parse(strings.NewReader(msg), Options{MaxBytes: int64(len(msg))})
	if err != nil || got.Reason == "too large" {
		t.Errorf("message at the limit: %+v, %v", got, err)
	}
}

// failingReader fails after its data.
type failingReader struct{ data string }

var errDisk = errors.New("disk on fire")

func (f *failingReader) Read(p []byte) (int, error) {
	if f.data == "" {
		return 0, errDisk
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

// TestEnvelopeTokensAlways: the envelope recipients give tokens even when
// the message is unreadable.
func TestEnvelopeTokensAlways(t *testing.T) {
	for _, in := range []string{"", "\x00\x01garbage", "Subject: x\n\nhello"} {
		got, err := Parse(strings.NewReader(in), Options{
			BounceAddress: "bounces@mail.example.org",
			Recipients:    []string{"bounces+ENV@mail.example.org"},
		})
		if err != nil || got.Kind != KindUnknown || !slices.Equal(got.Tokens, []string{"ENV"}) {
			t.Errorf("Parse(%q) = %+v, %v; want unknown with the envelope token", in, got, err)
		}
	}
}

func TestParseReaderError(t *testing.T) {
	_, err := Parse(&failingReader{data: "Subject: x\n\n"}, Options{})
	if !errors.Is(err, errDisk) {
		t.Fatalf("err = %v, want the reader's error", err)
	}
}
