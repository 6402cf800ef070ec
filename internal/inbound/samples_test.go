package inbound

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// bounceAddress is the bounce address the samples were written for; its
// case differs from the samples' on purpose.
const bounceAddress = "Bounces@Mail.Example.ORG"

// parseFile parses one sample with the test options.
func parseFile(t *testing.T, name string) Report {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := Parse(f, Options{BounceAddress: bounceAddress})
	if err != nil {
		t.Fatalf("Parse(%s): %v", name, err)
	}
	return rep
}

func TestParseSamples(t *testing.T) {
	tok := []string{"TESTTOKEN"}
	both := []string{"TESTTOKEN", "u-UNSUBTOKEN"}
	tests := []struct {
		file      string
		kind      Kind
		severity  Severity
		status    string
		action    string
		format    string
		recipient string
		tokens    []string
		msgIDs    []string
	}{
		{"postfix-dsn-hard.eml", KindBounce, SeverityHard, "5.1.1", "failed", FormatRFC3464, "nobody@example.net", both, []string{"post-1234.5678@feedmail.example.org"}},
		{"postfix-delayed.eml", KindBounce, SeverityNone, "4.4.1", "delayed", FormatRFC3464, "slow@example.com", tok, []string{"digest-77.1@feedmail.example.org"}},
		{"mailbox-full.eml", KindBounce, SeveritySoft, "5.2.2", "failed", FormatRFC3464, "anna@example.com", tok, []string{"post-99.4@feedmail.example.org"}},
		{"sendmail-dsn.eml", KindBounce, SeverityHard, "5.1.1", "failed", FormatRFC3464, "prof.gone@example.edu", tok, []string{"post-555.1@feedmail.example.org"}},
		{"outlook-dsn.eml", KindBounce, SeverityHard, "5.5.0", "failed", FormatRFC3464, "gone.person@outlook.com", tok, []string{"post-1234.5679@feedmail.example.org"}},
		{"gmail-dsn.eml", KindBounce, SeverityHard, "5.1.1", "failed", FormatRFC3464, "no.such.person.4711@gmail.com", tok, []string{"post-4242.1@feedmail.example.org"}},
		{"ses-dsn.eml", KindBounce, SeverityHard, "5.1.1", "failed", FormatRFC3464, "left.company@example.co.uk", tok, []string{"digest-88.3@feedmail.example.org"}},
		{"global-dsn.eml", KindBounce, SeverityHard, "5.1.1", "failed", FormatRFC6533, "山田@例え.jp", tok, []string{"post-8.8@feedmail.example.org"}},
		{"exim-nondsn.eml", KindBounce, SeverityHard, "", "failed", FormatExim, "ghost@example.net", tok, []string{"post-321.9@feedmail.example.org"}},
		{"exim-delay.eml", KindBounce, SeverityNone, "4.3.0", "delayed", FormatExim, "busy@example.net", tok, nil},
		{"qmail-failure.eml", KindBounce, SeverityHard, "5.1.1", "failed", FormatQmail, "olduser@qm.example.com", tok, []string{"post-777.2@feedmail.example.org"}},
		{"yahoo-failure.eml", KindBounce, SeverityHard, "", "failed", FormatYahoo, "closed.account@yahoo.com", tok, []string{"post-31.7@feedmail.example.org"}},
		{"exchange-legacy.eml", KindBounce, SeverityHard, "5.1.1", "failed", FormatExchange, "", tok, []string{"post-64.2@feedmail.example.org"}},
		{"sendmail-legacy.eml", KindBounce, SeverityHard, "", "failed", FormatSendmail, "retired@old.example.edu", tok, []string{"post-12.5@feedmail.example.org"}},
		{"gmail-legacy.eml", KindBounce, SeverityNone, "", "delayed", FormatGmail, "far.away@example.com", tok, []string{"post-13.6@feedmail.example.org"}},
		{"lotus-generic.eml", KindBounce, SeverityHard, "", "failed", FormatGeneric, "hans.becker@notes.example.com", tok, []string{"post-14.7@feedmail.example.org"}},
		{"postfix-text.eml", KindBounce, SeveritySoft, "", "failed", FormatPostfix, "full.box@oldbox.example.net", tok, []string{"post-15.8@feedmail.example.org"}},
		{"arf-abuse.eml", KindComplaint, SeverityNone, "", "abuse", FormatARF, "reader@isp.example.net", both, []string{"post-1234.5680@feedmail.example.org"}},
		{"yahoo-cfl.eml", KindComplaint, SeverityNone, "", "abuse", FormatYahooCFL, "redacted@yahoo.com", tok, []string{"post-1234.5681@feedmail.example.org"}},
		{"jmrp-arf.eml", KindComplaint, SeverityNone, "", "abuse", FormatJMRP, "redacted", tok, []string{"post-1234.5682@feedmail.example.org"}},
		{"jmrp-legacy.eml", KindComplaint, SeverityNone, "", "abuse", FormatJMRP, "reader.one@hotmail.com", tok, []string{"post-1234.5683@feedmail.example.org"}},
		{"aol-arf.eml", KindComplaint, SeverityNone, "", "abuse", FormatAOL, "redacted@aol.com", both, []string{"post-1234.5684@feedmail.example.org"}},
		{"autoreply-exchange.eml", KindAutoReply, SeverityNone, "", "auto-generated", FormatAutoHeader, "", tok, nil},
		{"autoreply-gmail-vacation.eml", KindAutoReply, SeverityNone, "", "auto-replied", FormatAutoHeader, "", tok, nil},
		{"autoreply-xautoreply.eml", KindAutoReply, SeverityNone, "", "", FormatAutoHeader, "", tok, nil},
		{"autoreply-subject.eml", KindAutoReply, SeverityNone, "", "", FormatAutoSubj, "", tok, nil},
		{"dsn-delivered.eml", KindUnknown, SeverityNone, "2.0.0", "delivered", FormatRFC3464, "reader@example.com", tok, nil},
		{"plain.eml", KindUnknown, SeverityNone, "", "", "", "", []string{"u-UNSUBTOKEN"}, nil},
	}
	files, err := filepath.Glob("testdata/*.eml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(tests) {
		t.Errorf("%d samples in testdata, %d in the table: add the new ones", len(files), len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got := parseFile(t, tt.file)
			if got.Kind != tt.kind || got.Severity != tt.severity || got.Status != tt.status ||
				got.Action != tt.action || got.Format != tt.format || got.Recipient != tt.recipient {
				t.Errorf("got kind=%q severity=%q status=%q action=%q format=%q recipient=%q (reason %q)\n"+
					"want kind=%q severity=%q status=%q action=%q format=%q recipient=%q",
					got.Kind, got.Severity, got.Status, got.Action, got.Format, got.Recipient, got.Reason,
					tt.kind, tt.severity, tt.status, tt.action, tt.format, tt.recipient)
			}
			if !slices.Equal(got.Tokens, tt.tokens) {
				t.Errorf("Tokens = %q, want %q", got.Tokens, tt.tokens)
			}
			if !slices.Equal(got.OriginalMessageIDs, tt.msgIDs) {
				t.Errorf("OriginalMessageIDs = %q, want %q", got.OriginalMessageIDs, tt.msgIDs)
			}
			if got.Kind == KindUnknown && got.Reason == "" {
				t.Error("unknown without a Reason")
			}
			if got.Kind == KindBounce && got.Diagnostic == "" {
				t.Error("bounce without a Diagnostic")
			}
		})
	}
}

// TestSampleWithoutBounceAddress: no configured address, no tokens, same
// classification.
func TestSampleWithoutBounceAddress(t *testing.T) {
	f, err := os.Open("testdata/postfix-dsn-hard.eml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := Parse(f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Kind != KindBounce || rep.Severity != SeverityHard || rep.Tokens != nil {
		t.Errorf("got %+v, want a hard bounce without tokens", rep)
	}
}
