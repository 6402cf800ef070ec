package websub

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"hash"
	"strings"
	"testing"
)

func hexMAC(h func() hash.Hash, secret, body []byte) string {
	m := hmac.New(h, secret)
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

func TestVerifySignature(t *testing.T) {
	secret := []byte("websub.rocks secret")
	body := []byte(`<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><title>new post</title></feed>`)
	algs := []struct {
		name string
		h    func() hash.Hash
	}{{"sha1", sha1.New}, {"sha256", sha256.New}, {"sha384", sha512.New384}, {"sha512", sha512.New}}

	type tc struct {
		name    string
		secret  []byte
		header  string
		body    []byte
		wantErr error // nil = valid
	}
	var tests []tc
	for _, a := range algs {
		good := hexMAC(a.h, secret, body)
		badDigest := []byte(good)
		if badDigest[0] == '0' {
			badDigest[0] = '1'
		} else {
			badDigest[0] = '0'
		}
		tests = append(tests,
			tc{a.name + " valid", secret, a.name + "=" + good, body, nil},
			tc{a.name + " upper-case hex and method", secret, strings.ToUpper(a.name) + "=" + strings.ToUpper(good), body, nil},
			// websub.rocks 301: a signature that does not match.
			tc{a.name + " wrong digest", secret, a.name + "=" + string(badDigest), body, ErrSignatureMismatch},
			tc{a.name + " tampered body", secret, a.name + "=" + good, append([]byte("x"), body...), ErrSignatureMismatch},
			tc{a.name + " other secret", []byte("another secret"), a.name + "=" + good, body, ErrSignatureMismatch},
			tc{a.name + " truncated", secret, a.name + "=" + good[:len(good)-2], body, ErrMalformedSignature},
			tc{a.name + " odd hex", secret, a.name + "=" + good[:len(good)-1], body, ErrMalformedSignature},
			tc{a.name + " not hex", secret, a.name + "=" + "zz" + good[2:], body, ErrMalformedSignature},
		)
	}
	sha1Sig := hexMAC(sha1.New, secret, body)
	tests = append(tests,
		// websub.rocks 302: a subscription with a secret gets an unsigned delivery.
		tc{"missing", secret, "", body, ErrNoSignature},
		tc{"blank", secret, "   ", body, ErrNoSignature},
		tc{"md5 unknown", secret, "md5=" + hexMAC(sha1.New, secret, body)[:32], body, ErrUnknownMethod},
		tc{"sha224 unknown", secret, "sha224=abcd", body, ErrUnknownMethod},
		tc{"no equals", secret, sha1Sig, body, ErrMalformedSignature},
		tc{"sha1 digest labelled sha256", secret, "sha256=" + sha1Sig, body, ErrMalformedSignature},
		tc{"empty digest", secret, "sha256=", body, ErrMalformedSignature},
		tc{"no secret", nil, "sha1=" + sha1Sig, body, ErrNoSecret},
		tc{"empty body valid", secret, "sha256=" + hexMAC(sha256.New, secret, nil), nil, nil},
	)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := VerifySignature(tt.secret, tt.header, tt.body)
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("VerifySignature = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("VerifySignature = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func TestSignRoundTrip(t *testing.T) {
	secret, body := []byte("s3cret"), []byte("payload")
	for _, m := range []string{"sha1", "sha256", "sha384", "SHA512"} {
		h, err := Sign(secret, m, body)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(h, strings.ToLower(m)+"=") {
			t.Errorf("Sign(%s) = %q", m, h)
		}
		if err := VerifySignature(secret, h, body); err != nil {
			t.Errorf("%s: %v", m, err)
		}
	}
	if _, err := Sign(secret, "md5", body); !errors.Is(err, ErrUnknownMethod) {
		t.Errorf("Sign(md5) err = %v", err)
	}
}
