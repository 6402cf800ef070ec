package inbound

import (
	"strings"
	"testing"
)

// hostile returns messages of about n bytes built to make a parser work
// harder than linear: long folded headers, many delimiters, many token
// look-alikes, HTML without closing brackets, broken encodings.
func hostile(n int) map[string]string {
	fill := func(prefix, unit, suffix string) string {
		var b strings.Builder
		b.WriteString(prefix)
		for b.Len() < n-len(suffix)-len(unit) {
			b.WriteString(unit)
		}
		b.WriteString(suffix)
		return b.String()
	}
	daemon := "From: MAILER-DAEMON@x\nSubject: failure notice\n"
	return map[string]string{
		"continuations": fill("Subject: x\n", "\t y\n", "\nbody"),
		"fields":        fill("", "X-A: y\n", "\nbody"),
		"delimiters":    fill("Content-Type: multipart/mixed; boundary=b\n\n", "--b\n", "--b--\n"),
		"inline-delims": fill("Content-Type: multipart/mixed; boundary=b\n\n--b\n\n", "x --b --b --b", "\n--b--\n"),
		"nested":        nested(maxDepth-1) + fill("", "aaaaaaaaaaaaaaa\n", ""),
		"tokens":        fill("To: ", "bounces+A1@mail.example.org, ", "\n\nbody"),
		"token-prefix":  fill("To: ", "bounces+bounces+bounces+", "\n\nbody"),
		"bounce-text":   fill(daemon+"\n", "<a@b.example>: 550 5.1.1 user unknown\n", ""),
		"html-lt":       fill(daemon+"Content-Type: text/html\n\n", "<<<<<<<<<<", ""),
		"dsn-fields":    fill("Content-Type: multipart/report; boundary=B\n\n--B\nContent-Type: message/delivery-status\n\n", "Action: failed\nStatus: 5.1.1\n\n", ""),
		"arf-fields":    fill("Content-Type: message/feedback-report\n\n", "Feedback-Type: abuse\n", ""),
		"qp":            fill("Content-Transfer-Encoding: quoted-printable\n\n", "=\n=4", ""),
		"base64":        fill("Content-Transfer-Encoding: base64\n\n", "QUJD\n", ""),
		"originals":     fill("Content-Type: multipart/mixed; boundary=b\n\n", "--b\nContent-Type: message/rfc822\n\nReturn-Path: <bounces+X@mail.example.org>\n\n", ""),
		"quoted":        fill(daemon+"\n--- Below this line is a copy of the message.\n\n", "Return-Path: <bounces+X@mail.example.org>\n", ""),
		"encoded-words": fill("Subject: ", "=?utf-8?q?a?= ", "\n\nbody"),
	}
}

// BenchmarkParseHostile parses each hostile message of just under the
// default limit: go test -run '^$' -bench ParseHostile -benchtime 1x ./internal/inbound/
func BenchmarkParseHostile(b *testing.B) {
	for name, in := range hostile(DefaultMaxBytes - 4096) {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				if _, err := Parse(strings.NewReader(in), Options{BounceAddress: "bounces@mail.example.org"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestParseHostileSmall runs the hostile shapes at a small size so that
// every test run covers them (the benchmark covers the full size).
func TestParseHostileSmall(t *testing.T) {
	for name, in := range hostile(8 << 10) {
		rep, err := Parse(strings.NewReader(in), Options{BounceAddress: "bounces@mail.example.org"})
		if err != nil || rep.Kind == "" {
			t.Errorf("%s: %+v, %v", name, rep, err)
		}
	}
}
