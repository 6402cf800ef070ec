package mailer

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wneessen/go-mail"

	"github.com/feedmail/feedmail/internal/testkit/smtptest"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
)

func TestParseDKIMKey(t *testing.T) {
	tests := []struct {
		file, wantErr string // wantErr "" means the key is accepted
	}{
		{"dkim-rsa2048-pkcs1.pem", ""},
		{"dkim-rsa2048-pkcs8.pem", ""},
		{"dkim-ed25519.pem", ""},
		{"dkim-rsa1024.pem", "RSA key of 1024 bits: DKIM signing needs 2048 or more"},
		{"dkim-ec-p256.pem", "*ecdsa.PrivateKey keys cannot sign DKIM"},
		{"dkim-rsa2048-encrypted.pem", "the key is encrypted"},
		{"dkim-rsa2048-public.pem", "the file holds a public key, not a private key"},
		{"missing.pem", "no such file or directory"},
		{"../doc.go", "not a PEM file"},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			d, err := LoadDKIMSigner("example.com", "fm1", filepath.Join("testdata", tc.file))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("err = %v, want it to say %q", err, tc.wantErr)
			case err != nil && strings.Contains(err.Error(), "\n"):
				t.Errorf("error is not one line: %q", err)
			}
			if err == nil {
				name, value := d.DNSRecord()
				if name != "fm1._domainkey.example.com" || !strings.HasPrefix(value, "v=DKIM1; k=") {
					t.Errorf("DNSRecord = %q, %q", name, value)
				}
			}
		})
	}
	if _, err := NewDKIMSigner("", "fm1", ed25519.NewKeyFromSeed(make([]byte, 32))); err == nil {
		t.Error("a signer without a domain was made")
	}
}

// TestDKIMSignsEveryEmail sends the item, digest and notice emails through
// WithDKIM over a Maildir and over SMTP, with an RSA and an Ed25519 key,
// and checks each delivered message with a verifier written in this test
// from RFC 6376 (not the signing library) and, for RSA, with Perl's
// Mail::DKIM (SpamAssassin's dependency; Ed25519 there needs CryptX, which
// Debian's spamassassin does not pull in). Each signature must cover
// DKIMSignedHeaders, and an edited List-Unsubscribe must break it.
func TestDKIMSignsEveryEmail(t *testing.T) {
	for _, keyFile := range []string{"dkim-rsa2048-pkcs1.pem", "dkim-ed25519.pem"} {
		t.Run(keyFile, func(t *testing.T) {
			d, err := LoadDKIMSigner("example.com", "fm1", filepath.Join("testdata", keyFile))
			if err != nil {
				t.Fatal(err)
			}
			_, txt := d.DNSRecord()
			pub := d.key.Public()
			s := Sender{Address: "feedmail@example.com", IDKey: []byte("install-key-0123456789")}

			srv := smtptest.StartT(t, smtptest.Options{})
			cfg, err := ParseSMTPURL(srv.URL())
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			md, err := NewMaildir(dir)
			if err != nil {
				t.Fatal(err)
			}
			transports := map[string]Transport{
				"smtp":    WithDKIM(NewSMTP(cfg, WithHELO("client.test")), d),
				"maildir": WithDKIM(md, d),
			}
			delivered := map[string][]byte{} // transport/email → raw (CRLF)
			for _, tname := range slices.Sorted(maps.Keys(transports)) {
				msgs := sampleMsgs(t, s)
				for _, m := range msgs {
					if err := SetFeedbackHeaders(m, FeedbackID(3, 0, "item"), "bounces+abc@example.com"); err != nil {
						t.Fatal(err)
					}
				}
				names := slices.Sorted(maps.Keys(msgs))
				var list []*mail.Msg
				for _, n := range names {
					list = append(list, msgs[n])
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				for i, err := range transports[tname].Send(ctx, list) {
					if err != nil {
						t.Fatalf("%s: %s: %v", tname, names[i], err)
					}
				}
				cancel()
				_ = transports[tname].Close()
				raws := srv.Messages()
				if tname == "maildir" {
					raws = nil
					entries, err := os.ReadDir(filepath.Join(dir, "new"))
					if err != nil {
						t.Fatal(err)
					}
					for _, e := range entries {
						b, err := os.ReadFile(filepath.Join(dir, "new", e.Name()))
						if err != nil {
							t.Fatal(err)
						}
						raws = append(raws, smtptest.Message{Raw: b})
					}
				}
				if len(raws) != len(names) {
					t.Fatalf("%s delivered %d messages, want %d", tname, len(raws), len(names))
				}
				for _, m := range raws {
					raw := crlf(m.Raw)
					id := headerValue(raw, "Message-Id")
					for n, sent := range msgs {
						if sent.GetMessageID() == id {
							delivered[tname+"/"+n] = raw
						}
					}
				}
			}
			if len(delivered) != 2*len(sampleMsgs(t, s)) {
				t.Fatalf("matched %d delivered messages to what was sent", len(delivered))
			}
			for _, name := range slices.Sorted(maps.Keys(delivered)) {
				raw := delivered[name]
				tags, err := verifyDKIM(raw, pub)
				if err != nil {
					t.Errorf("%s: %v\n%s", name, err, raw)
					continue
				}
				signed := strings.Split(strings.ToLower(strings.Join(strings.Fields(tags["h"]), "")), ":")
				for _, h := range []string{"from", "to", "subject", "date", "message-id", "mime-version", "content-type",
					"list-id", "list-unsubscribe", "list-unsubscribe-post", "feedback-id", "cfbl-address"} {
					if !slices.Contains(signed, h) {
						t.Errorf("%s: h=%s does not cover %s", name, tags["h"], h)
					}
				}
				if tags["c"] != "relaxed/relaxed" || tags["d"] != "example.com" || tags["s"] != "fm1" {
					t.Errorf("%s: c=%s d=%s s=%s", name, tags["c"], tags["d"], tags["s"])
				}
				head, body, _ := bytes.Cut(raw, []byte("\r\n\r\n"))
				edited := slices.Concat(head, []byte("\r\n\r\n"), bytes.Replace(body, []byte("feedmail"), []byte("feedmale"), 1))
				if _, err := verifyDKIM(edited, pub); err == nil || bytes.Equal(edited, raw) {
					t.Errorf("%s: an edited body still verifies (%v)", name, err)
				}
				if cfbl := headerValue(raw, "CFBL-Address"); cfbl != "bounces+abc@example.com; report=arf" {
					t.Errorf("%s: CFBL-Address %q", name, cfbl)
				} else if _, err := verifyDKIM(bytes.Replace(raw, []byte("CFBL-Address: bounces+abc@"), []byte("CFBL-Address: abuse@"), 1), pub); err == nil {
					t.Errorf("%s: an edited CFBL-Address still verifies", name)
				}
				if lu := headerValue(raw, "List-Unsubscribe"); lu != "" {
					edited := bytes.Replace(raw, []byte("List-Unsubscribe: <"), []byte("List-Unsubscribe: <https://evil.example/?u="), 1)
					if _, err := verifyDKIM(edited, pub); err == nil {
						t.Errorf("%s: an edited List-Unsubscribe still verifies", name)
					}
				}
			}
			t.Logf("%d messages verified by the RFC 6376 check in this test", len(delivered))
			if _, ok := pub.(*rsa.PublicKey); ok {
				t.Run("Mail::DKIM", func(t *testing.T) { perlVerify(t, delivered, txt) })
			}
		})
	}
}

// crlf returns raw with LF line ends (a Maildir file) turned into CRLF.
func crlf(raw []byte) []byte {
	return bytes.ReplaceAll(bytes.ReplaceAll(raw, []byte("\r\n"), []byte("\n")), []byte("\n"), []byte("\r\n"))
}

// headerValue returns the unfolded value of the first header field name.
func headerValue(raw []byte, name string) string {
	for _, f := range headerFields(raw) {
		if n, v, _ := strings.Cut(f, ":"); strings.EqualFold(strings.TrimSpace(n), name) {
			return strings.TrimSpace(strings.NewReplacer("\r\n", "").Replace(v))
		}
	}
	return ""
}

// headerFields splits the header of raw (CRLF) into fields, each with its
// folding and its final CRLF.
func headerFields(raw []byte) []string {
	head, _, _ := bytes.Cut(raw, []byte("\r\n\r\n"))
	var fields []string
	for _, line := range strings.SplitAfter(string(head)+"\r\n", "\r\n") {
		if line == "" {
			continue
		}
		if (line[0] == ' ' || line[0] == '\t') && len(fields) > 0 {
			fields[len(fields)-1] += line
			continue
		}
		fields = append(fields, line)
	}
	return fields
}

var (
	wspRun   = regexp.MustCompile(`[ \t]+`)
	bTagFull = regexp.MustCompile(`(^|;)([ \t\r\n]*b[ \t\r\n]*=)[^;]*`)
)

// relaxedHeader is RFC 6376 §3.4.2: lower-case name, unfolded value with
// runs of white space as one space, none at the ends, then CRLF.
func relaxedHeader(field string) string {
	name, value, _ := strings.Cut(field, ":")
	value = strings.ReplaceAll(value, "\r\n", "")
	value = strings.TrimSpace(wspRun.ReplaceAllString(value, " "))
	return strings.ToLower(strings.TrimRight(name, " \t")) + ":" + value + "\r\n"
}

// relaxedBody is RFC 6376 §3.4.4: white space runs as one space, none at
// line ends, no empty lines at the end, a final CRLF unless empty.
func relaxedBody(body []byte) []byte {
	lines := strings.Split(string(body), "\r\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(wspRun.ReplaceAllString(l, " "), " ")
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) == 0 {
		return nil
	}
	return []byte(strings.Join(lines, "\r\n") + "\r\n")
}

// verifyDKIM checks the one DKIM-Signature of raw (CRLF) against pub as
// RFC 6376 §3.7 and RFC 8463 say, for relaxed/relaxed sha256 signatures,
// and returns its tags. It shares no code with the signer.
func verifyDKIM(raw []byte, pub crypto.PublicKey) (map[string]string, error) {
	_, body, ok := bytes.Cut(raw, []byte("\r\n\r\n"))
	if !ok {
		return nil, errors.New("no end of header")
	}
	fields := headerFields(raw)
	sigField := ""
	for _, f := range fields {
		if strings.HasPrefix(strings.ToLower(f), "dkim-signature:") {
			if sigField != "" {
				return nil, errors.New("two DKIM-Signature fields")
			}
			sigField = f
		}
	}
	if sigField == "" {
		return nil, errors.New("no DKIM-Signature")
	}
	tags := map[string]string{}
	_, tagList, _ := strings.Cut(sigField, ":")
	for _, kv := range strings.Split(tagList, ";") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		k = strings.TrimSpace(k)
		v = strings.TrimSpace(strings.ReplaceAll(v, "\r\n", ""))
		if k == "b" || k == "bh" {
			v = strings.Join(strings.Fields(v), "")
		}
		tags[k] = v
	}
	if tags["v"] != "1" || tags["c"] != "relaxed/relaxed" {
		return tags, fmt.Errorf("v=%s c=%s, want 1 and relaxed/relaxed", tags["v"], tags["c"])
	}
	bh := sha256.Sum256(relaxedBody(body))
	if got := base64.StdEncoding.EncodeToString(bh[:]); got != tags["bh"] {
		return tags, fmt.Errorf("body hash %s, signature says bh=%s", got, tags["bh"])
	}
	// Header hash: the fields named in h=, each the last unused instance
	// from the bottom; absent ones count for nothing. Then the signature
	// field itself with an empty b= and no final CRLF.
	used := map[int]bool{}
	h := sha256.New()
	for _, name := range strings.Split(tags["h"], ":") {
		name = strings.TrimSpace(name)
		for i := len(fields) - 1; i >= 0; i-- {
			n, _, _ := strings.Cut(fields[i], ":")
			if !used[i] && strings.EqualFold(strings.TrimSpace(n), name) {
				used[i] = true
				h.Write([]byte(relaxedHeader(fields[i])))
				break
			}
		}
	}
	sigName, sigValue, _ := strings.Cut(sigField, ":")
	emptied := sigName + ":" + bTagFull.ReplaceAllString(sigValue, "$1$2")
	h.Write([]byte(strings.TrimSuffix(relaxedHeader(emptied), "\r\n")))
	digest := h.Sum(nil)
	sig, err := base64.StdEncoding.DecodeString(tags["b"])
	if err != nil {
		return tags, fmt.Errorf("b=: %w", err)
	}
	switch k := pub.(type) {
	case *rsa.PublicKey:
		if tags["a"] != "rsa-sha256" {
			return tags, fmt.Errorf("a=%s for an RSA key", tags["a"])
		}
		if err := rsa.VerifyPKCS1v15(k, crypto.SHA256, digest, sig); err != nil {
			return tags, fmt.Errorf("RSA signature: %w", err)
		}
	case ed25519.PublicKey:
		if tags["a"] != "ed25519-sha256" {
			return tags, fmt.Errorf("a=%s for an Ed25519 key", tags["a"])
		}
		if !ed25519.Verify(k, digest, sig) {
			return tags, errors.New("Ed25519 signature does not verify")
		}
	default:
		return tags, fmt.Errorf("key type %T", pub)
	}
	return tags, nil
}

// perlMailDKIM verifies the message on stdin with Perl's Mail::DKIM, the
// public key record taken from DKIM_TXT instead of DNS; it prints the
// result ("pass", or "fail (reason)") and the signed header list.
const perlMailDKIM = `
use strict; use warnings;
use Mail::DKIM::Verifier; use Net::DNS;
my $txt = $ENV{DKIM_TXT};
no warnings 'redefine';
*Mail::DKIM::DNS::query = sub {
    my ($name, $type) = @_;
    $@ = 'NOERROR';
    my @chunks = unpack('(A255)*', $txt);
    return (Net::DNS::RR->new(name => $name, type => 'TXT', txtdata => \@chunks));
};
binmode STDIN;
my $v = Mail::DKIM::Verifier->new();
while (my $line = <STDIN>) { $v->PRINT($line); }
$v->CLOSE;
print $v->result_detail, "\n";
`

// perlVerify checks every message with Mail::DKIM.
func perlVerify(t *testing.T, msgs map[string][]byte, txt string) {
	if err := exec.Command("perl", "-MMail::DKIM::Verifier", "-MNet::DNS", "-e", "1").Run(); err != nil {
		testutil.SkipOrFail(t, "Perl's Mail::DKIM is not installed (Debian: libmail-dkim-perl, a dependency of spamassassin)")
	}
	script := filepath.Join(t.TempDir(), "verify.pl")
	if err := os.WriteFile(script, []byte(perlMailDKIM), 0o600); err != nil {
		t.Fatal(err)
	}
	verify := func(name string, raw []byte) string {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "perl", script)
		cmd.Env = append(os.Environ(), "DKIM_TXT="+txt)
		cmd.Stdin = bytes.NewReader(raw)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: perl: %v\n%s", name, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	names := slices.Sorted(maps.Keys(msgs))
	for _, name := range names {
		if got := verify(name, msgs[name]); got != "pass" {
			t.Errorf("%s: Mail::DKIM says %q", name, got)
		}
	}
	// The check can fail: a changed word in the body, or in the subject.
	raw := msgs[names[0]]
	for what, edited := range map[string][]byte{
		"body":    editAfterHeader(raw),
		"subject": bytes.Replace(raw, []byte("\r\nSubject: "), []byte("\r\nSubject: Re: "), 1),
	} {
		if bytes.Equal(edited, raw) {
			t.Fatalf("%s: nothing to edit in %s", names[0], what)
		}
		if got := verify(names[0]+" edited", edited); got == "pass" {
			t.Errorf("%s with an edited %s: Mail::DKIM says pass", names[0], what)
		}
	}
	t.Logf("%d messages verified by Mail::DKIM", len(msgs))
}

// editAfterHeader changes the case of the first lower-case letter of
// raw's body (after the blank line ending the header), leaving the header
// as it is.
func editAfterHeader(raw []byte) []byte {
	out := bytes.Clone(raw)
	i := bytes.Index(out, []byte("\n\n"))
	if j := bytes.Index(out, []byte("\r\n\r\n")); j >= 0 && (i < 0 || j < i) {
		i = j
	}
	for i >= 0 && i < len(out) {
		if out[i] >= 'a' && out[i] <= 'z' {
			out[i] -= 'a' - 'A'
			return out
		}
		i++
	}
	return out
}
