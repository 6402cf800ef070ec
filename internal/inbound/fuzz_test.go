package inbound

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"
)

// FuzzParse checks that no input panics or errors, and that every report
// is well-formed: a known kind, a severity only on bounces, short valid
// UTF-8 text.
func FuzzParse(f *testing.F) {
	files, err := filepath.Glob("testdata/*.eml")
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(""))
	f.Add([]byte(nested(12)))
	f.Add([]byte(dsn("bounces+X@mail.example.org", "bounces+Y@mail.example.org")))
	f.Fuzz(func(t *testing.T, data []byte) {
		rep, err := Parse(bytes.NewReader(data), Options{
			BounceAddress: "bounces@mail.example.org",
			Recipients:    []string{"bounces+ENV@mail.example.org"},
			MaxBytes:      1 << 20,
		})
		if err != nil {
			t.Fatalf("Parse: %v", err)
		}
		switch rep.Kind {
		case KindBounce:
			if !rep.Cause.Known() || rep.Party != rep.Cause.Party() {
				t.Errorf("bounce with cause %q party %q", rep.Cause, rep.Party)
			}
			if want := Severity(rep.Cause.Severity()); rep.Severity != want && !(rep.Action == "delayed" && rep.Severity == SeveritySoft) {
				t.Errorf("bounce of cause %q with severity %q, want %q", rep.Cause, rep.Severity, want)
			}
		case KindComplaint, KindAutoReply, KindUnknown:
			if rep.Severity != SeverityNone {
				t.Errorf("%s with severity %q", rep.Kind, rep.Severity)
			}
		default:
			t.Fatalf("invalid kind %q", rep.Kind)
		}
		if rep.Kind == KindUnknown && rep.Reason == "" {
			t.Error("unknown without a reason")
		}
		if utf8.RuneCountInString(rep.Diagnostic) > 200 {
			t.Errorf("diagnostic of %d runes", utf8.RuneCountInString(rep.Diagnostic))
		}
		for _, s := range append([]string{rep.Diagnostic, rep.Recipient, rep.Status, rep.Action, rep.Format}, rep.Tokens...) {
			if !utf8.ValidString(s) {
				t.Errorf("invalid UTF-8 %q", s)
			}
		}
		if len(rep.Tokens) == 0 || rep.Tokens[0] != "ENV" {
			t.Errorf("Tokens = %q, want the envelope token first", rep.Tokens)
		}
	})
}
