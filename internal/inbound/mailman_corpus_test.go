package inbound

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The second public corpus: the real bounces that Mailman's bounce
// detector (flufl.bounce, LGPL-3) collected over twenty years, with the
// expectations of its own test suite. Debian ships both in the package
// python3-flufl.bounce, which CI installs, so this corpus is read where
// the package puts it and nothing of it is copied here.
const fluflDir = "/usr/lib/python3/dist-packages/flufl/bounce"

// fluflLabel is what flufl.bounce's tests expect of one sample: the
// addresses it names as failed, and whether they failed for now only
// (a delay warning) rather than for good.
type fluflLabel struct {
	addrs     []string
	temporary bool
}

// fluflEntry matches one entry of the DATA table in flufl.bounce's
// testing/helpers.py: (detector, file, [addresses][, True]).
var fluflEntry = regexp.MustCompile(`\(\s*'(\w+)',\s*'([\w.]+)',\s*\[([^\]]*)\]\s*(,\s*True)?\s*\)`)

// fluflAddr matches one b'address' of an entry.
var fluflAddr = regexp.MustCompile(`b'([^']+)'`)

// fluflCorpus returns the folder of the installed flufl.bounce package:
// FEEDMAIL_FLUFL_BOUNCE, else where Debian installs it; "" when absent.
func fluflCorpus() string {
	for _, d := range []string{os.Getenv("FEEDMAIL_FLUFL_BOUNCE"), fluflDir} {
		if d == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(d, "testing", "helpers.py")); err == nil {
			return d
		}
	}
	return ""
}

// readFluflLabels parses the DATA table of the installed package: file →
// its label. A file listed twice (two detectors) has the union of both.
func readFluflLabels(t *testing.T, root string) map[string]fluflLabel {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(root, "testing", "helpers.py"))
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(src, []byte("\nDATA = ("))
	if i < 0 {
		t.Fatal("flufl.bounce helpers.py: no DATA table")
	}
	out := map[string]fluflLabel{}
	for _, m := range fluflEntry.FindAllSubmatch(src[i:], -1) {
		l := out[string(m[2])]
		for _, a := range fluflAddr.FindAllSubmatch(m[3], -1) {
			l.addrs = append(l.addrs, strings.ToLower(string(a[1])))
		}
		l.temporary = l.temporary || len(m[4]) > 0
		out[string(m[2])] = l
	}
	if len(out) < 100 {
		t.Fatalf("flufl.bounce helpers.py: %d labelled files, want over 100 (has the table's format changed?)", len(out))
	}
	return out
}

// fluflTally counts the judgement over the Mailman corpus.
type fluflTally struct {
	permanent, permRecognised, permFinal, permNamed int
	temporary, tempRecognised, tempNotHard          int
	notBounce, notBounceInert                       int
	misses                                          []string
}

// TestMailmanBounceCorpus parses every labelled sample of flufl.bounce's
// collection and holds the judgement to it: a permanent failure is
// recognised as a bounce (≥ 99 %) and judged final, never a mere delay
// (≥ 95 %); a delay warning is recognised and never counted hard (100 %;
// a full mailbox may count soft, which never stops delivery); what its
// suite calls no bounce has no effect. Under
// CI=true an absent package fails the test, since CI installs it.
func TestMailmanBounceCorpus(t *testing.T) {
	root := fluflCorpus()
	if root == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("flufl.bounce's samples are absent from %s: CI installs the Debian package python3-flufl.bounce", fluflDir)
		}
		t.Skip("Mailman bounce corpus absent: install the Debian package python3-flufl.bounce")
	}
	labels := readFluflLabels(t, root)
	files := make([]string, 0, len(labels))
	for f := range labels {
		files = append(files, f)
	}
	sort.Strings(files)
	var tally fluflTally
	for _, f := range files {
		raw, err := os.ReadFile(filepath.Join(root, "tests", "data", f))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		tally.add(f, labels[f], raw)
	}
	pct := func(n, d int) float64 { return 100 * float64(n) / float64(max(d, 1)) }
	t.Logf("Mailman corpus %s: %d permanent failures: recognised %d (%.1f %%), judged final %d (%.1f %%), the labelled address named %d (%.1f %%); %d delay warnings: recognised %d, counted hard %d; %d not bounces: without effect %d",
		root, tally.permanent, tally.permRecognised, pct(tally.permRecognised, tally.permanent),
		tally.permFinal, pct(tally.permFinal, tally.permanent), tally.permNamed, pct(tally.permNamed, tally.permanent),
		tally.temporary, tally.tempRecognised, tally.temporary-tally.tempNotHard, tally.notBounce, tally.notBounceInert)
	if testing.Verbose() {
		for _, m := range tally.misses {
			t.Log(m)
		}
	}
	if pct(tally.permRecognised, tally.permanent) < 99 {
		t.Errorf("permanent failures recognised %.1f %% < 99 %%", pct(tally.permRecognised, tally.permanent))
	}
	if pct(tally.permFinal, tally.permanent) < 95 {
		t.Errorf("permanent failures judged final %.1f %% < 95 %%", pct(tally.permFinal, tally.permanent))
	}
	if tally.tempRecognised != tally.temporary || tally.tempNotHard != tally.temporary {
		t.Errorf("delay warnings: %d, recognised %d, not counted hard %d: want all",
			tally.temporary, tally.tempRecognised, tally.tempNotHard)
	}
	if tally.notBounceInert != tally.notBounce {
		t.Errorf("%d of %d samples that are no bounce had an effect", tally.notBounce-tally.notBounceInert, tally.notBounce)
	}
}

// fluflNotBounce are the samples flufl.bounce's suite calls no bounce.
var fluflNotBounce = map[string]bool{"groupwise_03.txt": true}

// add parses one sample and counts it against its label. Samples whose
// suite names no address (and does not call them no bounce) are skipped:
// the address is what feedmail never needs, yet the label says nothing else.
func (c *fluflTally) add(name string, l fluflLabel, raw []byte) {
	rep, err := Parse(bytes.NewReader(raw), Options{})
	if err != nil {
		c.misses = append(c.misses, fmt.Sprintf("%s: %v", name, err))
		return
	}
	what := fmt.Sprintf("%s: kind %s (%s), cause %s, party %s, severity %q, action %q, recipient %q, diag %q",
		name, rep.Kind, rep.Reason, rep.Cause, rep.Party, rep.Severity, rep.Action, rep.Recipient, rep.Diagnostic)
	switch {
	case fluflNotBounce[name]:
		c.notBounce++
		if rep.Severity == SeverityNone {
			c.notBounceInert++
		} else {
			c.misses = append(c.misses, "no bounce with an effect: "+what)
		}
	case len(l.addrs) == 0:
	case l.temporary:
		c.temporary++
		if rep.Kind == KindBounce {
			c.tempRecognised++
		}
		if rep.Severity != SeverityHard {
			c.tempNotHard++
		}
		if rep.Kind != KindBounce || rep.Severity == SeverityHard {
			c.misses = append(c.misses, "delay: "+what)
		}
	default:
		c.permanent++
		recognised := rep.Kind == KindBounce
		final := recognised && rep.Action != "delayed" && rep.Cause != ""
		named := rep.Recipient != "" && containsFold(l.addrs, rep.Recipient)
		if recognised {
			c.permRecognised++
		}
		if final {
			c.permFinal++
		}
		if named {
			c.permNamed++
		}
		if !recognised || !final {
			c.misses = append(c.misses, "permanent: "+what)
		}
	}
}

// containsFold reports whether addrs holds a, compared without case and
// without angle brackets.
func containsFold(addrs []string, a string) bool {
	a = strings.ToLower(strings.Trim(a, "<> "))
	for _, x := range addrs {
		if x == a {
			return true
		}
	}
	return false
}
