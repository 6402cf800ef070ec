package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-msgauth/dkim"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
)

// writePEM writes a PEM block of typ holding der into dir/name.
func writePEM(t *testing.T, dir, name, typ string, der []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestServeRefusesBadDKIMKey: with the DKIM variables set, a key file
// that is missing, unreadable, not PEM, too short or of the wrong kind
// stops `serve` at start with one line naming the variable.
func TestServeRefusesBadDKIMKey(t *testing.T) {
	dir := t.TempDir()
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ecDER, err := x509.MarshalPKCS8PrivateKey(ec)
	if err != nil {
		t.Fatal(err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(ec.Public())
	if err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	unreadable := filepath.Join(dir, "unreadable")
	if err := os.Mkdir(unreadable, 0o700); err != nil { // reading a folder fails for root too
		t.Fatal(err)
	}
	tests := []struct{ name, file, want string }{
		{"missing", filepath.Join(dir, "missing.pem"), "no such file or directory"},
		{"unreadable", unreadable, "is a directory"},
		{"not PEM", garbage, "not a PEM file"},
		{"RSA 1024", writePEM(t, dir, "rsa1024.pem", "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(small)), "RSA key of 1024 bits: DKIM signing needs 2048 or more"},
		{"ECDSA", writePEM(t, dir, "ec.pem", "PRIVATE KEY", ecDER), "keys cannot sign DKIM: use RSA (2048 bits or more) or Ed25519"},
		{"public key", writePEM(t, dir, "pub.pem", "PUBLIC KEY", pubDER), "holds a public key, not a private key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cli := cliFor(storetest.FreshDSN(t, storetest.URL()), map[string]string{
				"FEEDMAIL_ROLES": "mailer", "FEEDMAIL_MAILDIR": t.TempDir(), "FEEDMAIL_DKIM_DOMAIN": "example.com",
				"FEEDMAIL_DKIM_SELECTOR": "fm1", "FEEDMAIL_DKIM_PRIVATE_KEY_FILE": tc.file,
			})
			code, _, errs := cli("serve")
			want := "feedmail serve: FEEDMAIL_DKIM_PRIVATE_KEY_FILE: "
			if code != 1 || !strings.HasPrefix(errs, want) || !strings.Contains(errs, tc.want) || strings.Count(errs, "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want exit 1 and one line %q…%q", code, errs, want, tc.want)
			}
		})
	}
}

// TestServeSignsMailAndWarnsAboutHTTP runs `serve` (mailer role, Maildir)
// with an Ed25519 DKIM key and a plain-http FEEDMAIL_BASE_URL: it warns
// once that one-click unsubscribe needs https, and the queued notice
// arrives signed (checked here against the key's TXT record; the
// independent verifiers run in package mailer's tests). With a loopback
// base URL there is no warning.
func TestServeSignsMailAndWarnsAboutHTTP(t *testing.T) {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := writePEM(t, t.TempDir(), "dkim.pem", "PRIVATE KEY", der)
	for _, tc := range []struct {
		base string
		warn bool
	}{{"http://feedmail.example.com", true}, {"http://127.0.0.1:8080", false}, {"https://feedmail.example.com", false}} {
		t.Run(tc.base, func(t *testing.T) {
			dsn := storetest.FreshDSN(t, storetest.URL())
			maildir := t.TempDir()
			env := map[string]string{
				"FEEDMAIL_DATABASE_URL": dsn, "FEEDMAIL_SECRET": "0123456789abcdef0123", "FEEDMAIL_LOG_LEVEL": "info",
				"FEEDMAIL_ROLES": "mailer", "FEEDMAIL_MAILDIR": maildir, "FEEDMAIL_FROM": "feedmail@news.example.com",
				"FEEDMAIL_BASE_URL": tc.base, "FEEDMAIL_DKIM_DOMAIN": "example.com", "FEEDMAIL_DKIM_SELECTOR": "fm1",
				"FEEDMAIL_DKIM_PRIVATE_KEY_FILE": keyFile,
			}
			st := storetest.OpenDSN(t, dsn, storetest.Options{})
			if _, err := st.Migrate(context.Background()); err != nil {
				t.Fatal(err)
			}
			u, _, err := st.EnsureUser(context.Background(), "reader@example.org")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.QueueNotice(context.Background(), u.ID, "test:1", store.Notice{Subject: "Hello", Text: "A notice.",
				Links: []store.NoticeLink{{Label: "Open", URL: tc.base + "/account"}}}); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan int, 1)
			var logs bytes.Buffer
			go func() {
				done <- run(ctx, []string{"serve"}, environOf(env), &bytes.Buffer{}, &logs)
			}()
			var raw []byte
			testutil.Eventually(t, 20*time.Second, func() bool {
				entries, _ := os.ReadDir(filepath.Join(maildir, "new"))
				if len(entries) == 0 {
					return false
				}
				raw, err = os.ReadFile(filepath.Join(maildir, "new", entries[0].Name()))
				return err == nil
			}, "the notice is delivered to the Maildir")
			cancel()
			if code := <-done; code != 0 {
				t.Fatalf("serve exited %d: %s", code, logs.String())
			}
			raw = bytes.ReplaceAll(raw, []byte("\n"), []byte("\r\n"))
			_, want := mustDNSRecord(t, key)
			vs, err := dkim.VerifyWithOptions(bytes.NewReader(raw), &dkim.VerifyOptions{
				LookupTXT: func(name string) ([]string, error) {
					if name != "fm1._domainkey.example.com" {
						t.Errorf("key looked up at %s", name)
					}
					return []string{want}, nil
				},
			})
			if err != nil || len(vs) != 1 || vs[0].Err != nil || vs[0].Domain != "example.com" {
				t.Fatalf("verifications %+v, err %v\n%s", vs, err, raw)
			}
			out := logs.String()
			if n := strings.Count(out, "RFC 8058 one-click unsubscribe needs https"); n != map[bool]int{true: 1, false: 0}[tc.warn] {
				t.Errorf("the https warning appears %d times, want it %v:\n%s", n, tc.warn, out)
			}
			if !strings.Contains(out, "DKIM signing on") || !strings.Contains(out, "v=DKIM1; k=ed25519; p=") {
				t.Errorf("no DKIM start line with the TXT record:\n%s", out)
			}
		})
	}
}

// mustDNSRecord is the TXT record of an Ed25519 key.
func mustDNSRecord(t *testing.T, key ed25519.PrivateKey) (string, string) {
	t.Helper()
	return "fm1._domainkey.example.com", "v=DKIM1; k=ed25519; p=" + base64.StdEncoding.EncodeToString(key.Public().(ed25519.PublicKey))
}
