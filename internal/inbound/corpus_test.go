package inbound

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/bounce"
)

// sisimaiReasons maps Sisimai's reasons onto the bounce vocabulary; the
// three that are no failure map to a kind instead.
var sisimaiReasons = map[string]bounce.Reason{
	"userunknown": bounce.UnknownUser, "hostunknown": bounce.UnknownDomain, "hasmoved": bounce.Moved,
	"notaccept": bounce.NotAccepting, "suspend": bounce.NotAccepting,
	"mailboxfull": bounce.MailboxFull, "mesgtoobig": bounce.TooLarge, "exceedlimit": bounce.TooLarge,
	"filtered": bounce.Filtered, "expired": bounce.Expired,
	"networkerror": bounce.Temporary, "systemerror": bounce.Temporary, "systemfull": bounce.Temporary,
	"mailererror": bounce.Temporary, "failedstarttls": bounce.Temporary,
	"toomanyconn": bounce.RateLimited, "speeding": bounce.RateLimited, "ratelimited": bounce.RateLimited,
	"blocked": bounce.Blocked, "badreputation": bounce.Blocked, "requireptr": bounce.Blocked,
	"rejected": bounce.SenderRejected, "norelaying": bounce.Blocked,
	"policyviolation": bounce.Policy, "spamdetected": bounce.Policy, "contenterror": bounce.Policy,
	"virusdetected": bounce.Policy, "notcompliantrfc": bounce.Policy, "emailtoolong": bounce.Policy,
	"authfailure": bounce.Authentication, "securityerror": bounce.Authentication,
	"syntaxerror": bounce.Syntax, "onhold": bounce.Undetermined, "undefined": bounce.Undetermined,
}

// disputedLabels are the samples whose label we believe is wrong, with
// why; they are counted like the others but do not fail the test's
// "no sender-side failure counted against a reader".
var disputedLabels = map[string]string{
	// RFC 3464's own example: "550 'rcpt@host' is not a registered
	// gateway user" names the recipient, not the sender.
	"rfc3464-35.eml": "the gateway names the recipient as unregistered",
}

// corpusLabel is one labelled recipient of a sample.
type corpusLabel struct {
	status, code, reason string
}

// readLabels reads testdata/sisimai-labels.tsv: file → its recipients.
func readLabels(t *testing.T) map[string][]corpusLabel {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "sisimai-labels.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]corpusLabel{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		c := strings.Split(line, "\t")
		if len(c) != 6 {
			t.Fatalf("labels: bad line %q", line)
		}
		if _, ok := sisimaiReasons[c[4]]; !ok && c[4] != "feedback" && c[4] != "vacation" && c[4] != "delivered" {
			t.Fatalf("labels: reason %q has no mapping", c[4])
		}
		out[c[0]] = append(out[c[0]], corpusLabel{status: c[2], code: c[3], reason: c[4]})
	}
	return out
}

// bounceCorpus returns the folder holding Sisimai's set-of-emails
// (maildir/bsd, mac, dos, err): FEEDMAIL_BOUNCE_CORPUS, else
// bounces/set-of-emails in the shared corpus. "" when absent.
func bounceCorpus() string {
	dirs := []string{os.Getenv("FEEDMAIL_BOUNCE_CORPUS")}
	if c := os.Getenv("FEEDMAIL_CORPUS"); c != "" {
		dirs = append(dirs, filepath.Join(c, "bounces", "set-of-emails"))
	}
	dirs = append(dirs, filepath.Join("..", "..", "..", "shared", "corpus", "bounces", "set-of-emails"))
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if st, err := os.Stat(filepath.Join(d, "maildir", "bsd")); err == nil && st.IsDir() {
			return d
		}
	}
	return ""
}

// corpusTally counts the judgement over the corpus.
type corpusTally struct {
	samples, recognised         int
	judged, reasonOK, partyOK   int
	senderCounted, readerMissed int
	severityOK, othersHard      int
	misses                      []string
	confusion                   map[string]int
}

// TestBounceCorpus parses every sample of a public corpus of real bounces
// (Sisimai's set-of-emails, in LF, CRLF and CR-only copies) and holds the
// judgement to what the issue asked: recognised ≥ 99 %, reason agreeing
// with the label ≥ 90 %, party right ≥ 95 %, and no sender-side failure
// counted against a reader. The corpus is not in the repository (its
// labels are, in testdata): set FEEDMAIL_BOUNCE_CORPUS to a copy.
func TestBounceCorpus(t *testing.T) {
	root := bounceCorpus()
	if root == "" {
		t.Skip("bounce corpus absent: set FEEDMAIL_BOUNCE_CORPUS to a copy of Sisimai's set-of-emails")
	}
	labels := readLabels(t)
	tally := corpusTally{confusion: map[string]int{}}
	start := time.Now()
	for _, dir := range []string{"bsd", "dos", "mac", "err"} {
		paths, _ := filepath.Glob(filepath.Join(root, "maildir", dir, "*.eml"))
		for _, p := range paths {
			raw, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			tally.add(dir+"/"+filepath.Base(p), labels[filepath.Base(p)], raw)
		}
	}
	elapsed := time.Since(start)
	pct := func(n, d int) float64 { return 100 * float64(n) / float64(max(d, 1)) }
	t.Logf("parsed %d samples in %v (%.0f µs each, reading files included)", tally.samples, elapsed.Round(time.Millisecond),
		float64(elapsed.Microseconds())/float64(max(tally.samples, 1)))
	t.Logf("bounce corpus %s: %d samples; recognised %d (%.1f %%); of %d labelled failures: reason agrees %d (%.1f %%), party right %d (%.1f %%); sender-side counted against a reader: %d; reader's address not counted: %d",
		root, tally.samples, tally.recognised, pct(tally.recognised, tally.samples), tally.judged,
		tally.reasonOK, pct(tally.reasonOK, tally.judged), tally.partyOK, pct(tally.partyOK, tally.judged),
		tally.senderCounted, tally.readerMissed)
	t.Logf("what counts against the reader agrees %d of %d (%.1f %%); not the reader's cause yet counted hard: %d",
		tally.severityOK, tally.judged, pct(tally.severityOK, tally.judged), tally.othersHard)
	if testing.Verbose() {
		keys := make([]string, 0, len(tally.confusion))
		for k := range tally.confusion {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return tally.confusion[keys[i]] > tally.confusion[keys[j]] })
		for _, k := range keys {
			t.Logf("expected→got %s: %d", k, tally.confusion[k])
		}
		for _, m := range tally.misses {
			t.Log(m)
		}
	}
	if pct(tally.recognised, tally.samples) < 99 {
		t.Errorf("recognised %.1f %% < 99 %%", pct(tally.recognised, tally.samples))
	}
	if pct(tally.reasonOK, tally.judged) < 90 {
		t.Errorf("reason agrees %.1f %% < 90 %%", pct(tally.reasonOK, tally.judged))
	}
	if pct(tally.partyOK, tally.judged) < 95 {
		t.Errorf("party right %.1f %% < 95 %%", pct(tally.partyOK, tally.judged))
	}
	if tally.senderCounted > 0 {
		t.Errorf("%d sender-side failures counted against a reader", tally.senderCounted)
	}
}

// add parses one sample and counts it against its labels (none for the
// unlabelled err/ samples, which are all bounces).
func (c *corpusTally) add(name string, labels []corpusLabel, raw []byte) {
	rep, err := Parse(bytes.NewReader(raw), Options{})
	if err != nil {
		c.misses = append(c.misses, fmt.Sprintf("%s: %v", name, err))
		return
	}
	c.samples++
	want := KindBounce
	if strings.Contains(name, "/rfc3834-") {
		want = KindAutoReply // RFC 3834 automatic responses
	}
	if len(labels) > 0 {
		switch labels[0].reason {
		case "feedback":
			want = KindComplaint
		case "vacation":
			want = KindAutoReply
		case "delivered":
			want = KindUnknown
		}
	}
	// A feedback report the parser names precisely also counts: an
	// authentication-failure report (not a complaint) and Apple Mail's
	// unsubscribe request (handled as one when it comes to an unsubscribe
	// address).
	named := want == KindComplaint && (rep.Reason == "auth-failure report" ||
		rep.Kind == KindAutoReply && bytes.Contains(raw, []byte("X-Apple-Unsubscribe: true")))
	if rep.Kind == want || want == KindBounce && rep.Kind == KindComplaint || named {
		c.recognised++
	} else {
		c.misses = append(c.misses, fmt.Sprintf("%s: not recognised: kind %s (%s), want %s", name, rep.Kind, rep.Reason, want))
	}
	if want != KindBounce || len(labels) == 0 {
		return
	}
	c.judged++
	exp := sisimaiReasons[labels[0].reason]
	reasonOK, partyOK := false, false
	for _, l := range labels {
		r := sisimaiReasons[l.reason]
		reasonOK = reasonOK || r == rep.Cause
		partyOK = partyOK || r.Party() == rep.Party
	}
	if reasonOK {
		c.reasonOK++
	} else {
		c.confusion[string(exp)+"→"+string(rep.Cause)]++
		c.misses = append(c.misses, fmt.Sprintf("%s: cause %s (party %s), want %s [%s %s %s] diag %q",
			name, rep.Cause, rep.Party, exp, labels[0].reason, labels[0].status, labels[0].code, rep.Diagnostic))
	}
	if partyOK {
		c.partyOK++
	}
	if exp.Party() == bounce.PartySender && rep.Severity != SeverityNone {
		if why, ok := disputedLabels[filepath.Base(name)]; ok {
			c.misses = append(c.misses, fmt.Sprintf("%s: disputed label (%s)", name, why))
		} else {
			c.senderCounted++
		}
	}
	if exp.Severity() == bounce.Hard && rep.Severity != SeverityHard {
		c.readerMissed++
	}
	// What counts against the reader (hard, soft, nothing), with a soft
	// count where none was due taken as harmless: it never pauses.
	gotSev, wantSev := rep.Severity, Severity(exp.Severity())
	if wantSev == SeverityNone && gotSev == SeveritySoft {
		gotSev = SeverityNone
	}
	if gotSev == wantSev {
		c.severityOK++
	}
	if wantSev == SeverityNone && gotSev == SeverityHard {
		c.othersHard++
	}
}
