package mailer

import (
	"bytes"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/wneessen/go-mail"
)

// TestDKIMVerifiesOnceThenCompares holds the signing cost: a signer
// verifies its first message with its public key, then only compares
// each message's second rendering with the signed one (every delivered
// message is verified independently in TestDKIMSignsEveryEmail), and that
// comparison still refuses a message that renders differently each time.
func TestDKIMVerifiesOnceThenCompares(t *testing.T) {
	for _, keyFile := range []string{"dkim-rsa2048-pkcs1.pem", "dkim-ed25519.pem"} {
		t.Run(keyFile, func(t *testing.T) {
			d, err := LoadDKIMSigner("example.com", "fm1", filepath.Join("testdata", keyFile))
			if err != nil {
				t.Fatal(err)
			}
			s := Sender{Address: "feedmail@example.com", IDKey: []byte("install-key-0123456789")}
			signed := 0
			for range 3 {
				for name, m := range sampleMsgs(t, s) {
					if err := SetFeedbackHeaders(m, FeedbackID(3, 0, "item"), "bounces+abc@example.com"); err != nil {
						t.Fatal(err)
					}
					if err := d.Sign(m); err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					// Signing again replaces the signature, and still checks.
					if err := d.Sign(m); err != nil {
						t.Fatalf("%s signed twice: %v", name, err)
					}
					raw, err := Render(m)
					if err != nil {
						t.Fatal(err)
					}
					if n := bytes.Count(raw, []byte("DKIM-Signature:")); n != 1 {
						t.Fatalf("%s: %d DKIM-Signature fields after signing twice", name, n)
					}
					if _, err := verifyDKIM(crlf(raw), d.key.Public()); err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					signed += 2
				}
			}
			if got := d.verifies.Load(); got != 1 {
				t.Errorf("%d messages signed, %d verified with the public key; want 1", signed, got)
			}
			if err := d.Sign(unstableMsg(t)); err == nil || !strings.Contains(err.Error(), "not stable") {
				t.Errorf("a message rendering differently each time: Sign returned %v, want the not-stable error", err)
			}
		})
	}
}

// unstableMsg is a message whose X-Render header counts its renderings.
func unstableMsg(t *testing.T) *mail.Msg {
	t.Helper()
	m := mail.NewMsg(mail.WithMiddleware(&renderCounter{}))
	if err := m.From("feedmail@example.com"); err != nil {
		t.Fatal(err)
	}
	if err := m.To("reader@example.org"); err != nil {
		t.Fatal(err)
	}
	m.Subject("Unstable")
	m.SetBodyString(mail.TypeTextPlain, "Hello.")
	return m
}

type renderCounter struct{ n int }

func (c *renderCounter) Handle(m *mail.Msg) *mail.Msg {
	c.n++
	m.SetGenHeader("X-Render", strconv.Itoa(c.n))
	return m
}

func (c *renderCounter) Type() mail.MiddlewareType { return "render-counter" }

func TestSameSigned(t *testing.T) {
	const base = "From: a@example.com\r\nList-Id: <1.example.com>\r\nFeedback-ID: 3:item\r\nSubject: Hi\r\n there\r\n\r\nBody.\r\n"
	for _, c := range []struct {
		name string
		b    string
		want bool
	}{
		{"same", base, true},
		{"fields of different names reordered", "From: a@example.com\r\nFeedback-ID: 3:item\r\nSubject: Hi\r\n there\r\nList-Id: <1.example.com>\r\n\r\nBody.\r\n", true},
		{"a field changed", strings.Replace(base, "3:item", "4:item", 1), false},
		{"a folded line changed", strings.Replace(base, " there", " then", 1), false},
		{"a field added", "X-A: 1\r\n" + base, false},
		{"body changed", strings.Replace(base, "Body.", "Body!", 1), false},
		{"no body", strings.TrimSuffix(base, "\r\n\r\nBody.\r\n"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := sameSigned([]byte(base), []byte(c.b)); got != c.want {
				t.Errorf("sameSigned = %v, want %v", got, c.want)
			}
		})
	}
	twice := "To: x@example.org\r\nTo: y@example.org\r\n\r\nB"
	if sameSigned([]byte(twice), []byte("To: y@example.org\r\nTo: x@example.org\r\n\r\nB")) {
		t.Error("fields of one name in another order compare equal; a signature picks them bottom up")
	}
	old := "DKIM-Signature: v=1;\r\n b=old\r\nFrom: a@example.com\r\n\r\nB"
	if got := string(withoutDKIMHeader([]byte(old))); got != "From: a@example.com\r\n\r\nB" {
		t.Errorf("withoutDKIMHeader = %q", got)
	}
}

// BenchmarkDKIMSign signs an item email of a ~5 KB post (Ed25519, after
// the signer's first message): two renderings and the signature.
func BenchmarkDKIMSign(b *testing.B) {
	d, err := LoadDKIMSigner("example.com", "fm1", filepath.Join("testdata", "dkim-ed25519.pem"))
	if err != nil {
		b.Fatal(err)
	}
	m, err := testSender().Item(benchItem(1))
	if err != nil {
		b.Fatal(err)
	}
	if err := d.Sign(m); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := d.Sign(m); err != nil {
			b.Fatal(err)
		}
	}
}
