package inbound

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// hostileInputs are messages built to look like bounces while being no
// well-formed report at all.
func hostileInputs() map[string][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	bin := make([]byte, 64<<10)
	for i := range bin {
		bin[i] = byte(rng.UintN(256))
	}
	header := "From: MAILER-DAEMON@mx.example.net\nReturn-Path: <>\nSubject: Undelivered Mail Returned to Sender\n"

	var deep strings.Builder
	deep.WriteString(header)
	for i := range 2000 {
		fmt.Fprintf(&deep, "Content-Type: multipart/mixed; boundary=b%d\n\n--b%d\n", i, i)
	}
	deep.WriteString("Content-Type: message/delivery-status\n\nFinal-Recipient: rfc822; a@example.com\nAction: failed\nStatus: 5.1.1\n")

	var wide strings.Builder
	wide.WriteString(header + "Content-Type: multipart/report; report-type=delivery-status; boundary=W\n\n")
	for range 20000 {
		wide.WriteString("--W\nContent-Type: text/plain\n\nuser unknown\n")
	}
	wide.WriteString("--W\nContent-Type: message/delivery-status\n\nFinal-Recipient: rfc822; a@example.com\nAction: failed\nStatus: 5.1.1\n--W--\n")

	return map[string][]byte{
		"bounce-like header then binary": append([]byte(header+"\n"), bin...),
		"2,000-deep MIME":                []byte(deep.String()),
		"20,000 parts":                   []byte(wide.String()),
	}
}

// TestHostileInputsHaveNoEffect: a message that only looks like a bounce
// is never one, so nothing can count it against a reader or refund it.
func TestHostileInputsHaveNoEffect(t *testing.T) {
	for name, msg := range hostileInputs() {
		t.Run(name, func(t *testing.T) {
			rep, err := Parse(bytes.NewReader(msg), Options{BounceAddress: "bounces@mail.example.org",
				Recipients: []string{"bounces+TOKEN@mail.example.org"}})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Kind != KindUnknown || rep.Severity != SeverityNone {
				t.Errorf("got kind %q severity %q cause %q (reason %q), want unknown without severity",
					rep.Kind, rep.Severity, rep.Cause, rep.Reason)
			}
		})
	}
}
