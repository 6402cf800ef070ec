package main

import (
	"net/mail"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/testkit/farm"
)

// TestPreviewCommand: `feedmail preview` prints the email of the feed's
// newest post as JSON, writes the whole message as a .eml file a mail
// program reads, previews a digest with --digest, and exits 2 on a bad
// flag and 1 on a feed that cannot be read. The feed is not stored.
func TestPreviewCommand(t *testing.T) {
	fm := farm.New(clock.Real{})
	t.Cleanup(fm.Close)
	now := time.Now().UTC()
	ff := fm.AddFeed(farm.Spec{Title: "CLI Feed", Items: []farm.Item{
		{Title: "Newest post", Content: "<p>Hello <b>there</b></p>", Published: now.Add(-time.Hour)},
		{Title: "Older post", Published: now.Add(-48 * time.Hour)},
	}})
	cli := pollCLI(t)
	type out struct {
		Subject, HTML, Text string
		Digest              bool
		EML                 string
		Forecast            struct{ Words string }
	}

	eml := filepath.Join(t.TempDir(), "newest.eml")
	code, stdout, stderr := cli("preview", "--feed", ff.URL(), "--format", "summary", "--tz", "Asia/Tokyo", "--eml", eml)
	if code != 0 {
		t.Fatalf("preview: exit %d\n%s", code, stderr)
	}
	o := decodeJSON[out](t, stdout)
	if o.Subject != "Newest post" || !strings.Contains(o.Text, "Hello there") || !strings.Contains(o.HTML, "you@example.com") ||
		o.Forecast.Words == "" || o.EML != eml {
		t.Errorf("preview output %+v", o)
	}
	f, err := os.Open(eml)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := mail.ReadMessage(f)
	if err != nil || m.Header.Get("Subject") != "Newest post" || !strings.HasPrefix(m.Header.Get("Content-Type"), "multipart/alternative") {
		t.Fatalf("the .eml file: %v %v", err, m.Header)
	}

	code, stdout, stderr = cli("preview", "--feed", ff.URL(), "--digest", "daily")
	if d := decodeJSON[out](t, stdout); code != 0 || !d.Digest || !strings.HasPrefix(d.Subject, "Your Daily digest") {
		t.Errorf("digest preview: exit %d %+v %s", code, d, stderr)
	}
	for _, bad := range [][]string{{"preview"}, {"preview", "--feed", ff.URL(), "--format", "everything"},
		{"preview", "--feed", ff.URL(), "--digest", "whenever"}, {"preview", "--feed", ff.URL(), "--tz", "Mars/Olympus"}} {
		if code, _, stderr := cli(bad...); code != 2 {
			t.Errorf("%q: exit %d, want 2\n%s", bad, code, stderr)
		}
	}
	gone := fm.AddFeed(farm.Spec{Status: 404})
	if code, _, stderr := cli("preview", "--feed", gone.URL()); code != 1 || !strings.Contains(stderr, "404") {
		t.Errorf("a missing feed: exit %d %s", code, stderr)
	}
	code, stdout, _ = cli("feed", "status", ff.URL())
	if code == 0 {
		t.Errorf("the previewed feed was stored: %s", stdout)
	}
}
