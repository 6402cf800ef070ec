package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// TestSubscribeSeveralDeliveries: subscribe with a new --channel/--target
// adds a delivery beside the email one ("created": true); the same one
// again takes the new settings ("created": false, same id); `subscription
// set` needs --channel to pick among several deliveries and changes that
// one only; pause --feed pauses every delivery of the feed, or the one
// picked; the export lists every delivery.
func TestSubscribeSeveralDeliveries(t *testing.T) {
	dsn := storetest.FreshDSN(t, storetest.URL())
	cli := cliFor(dsn, map[string]string{"FEEDMAIL_ALLOW_PRIVATE_NETWORKS": "1"})
	site := feedSite(t)
	feed := site + "/feed"
	must := func(args ...string) map[string]any {
		t.Helper()
		code, out, errs := cli(args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		return decodeJSON[map[string]any](t, out)
	}
	sub := func(args ...string) map[string]any {
		t.Helper()
		return must(append([]string{"subscribe", "--email", "r@example.com", "--feed", feed, "--confirmed"}, args...)...)
	}
	mail := sub()
	hook := sub("--channel", "webhook", "--target", "https://hooks.example.org/in", "--format", "title")
	if mail["created"] != true || hook["created"] != true || hook["subscription"] == mail["subscription"] {
		t.Fatalf("email %v, then webhook %v: want two new subscriptions", mail, hook)
	}
	again := sub("--channel", "webhook", "--target", "https://hooks.example.org/in", "--format", "summary")
	if again["created"] != false || again["subscription"] != hook["subscription"] || again["format"] != "summary" {
		t.Errorf("the same webhook again: %v; want subscription %v changed, not created", again, hook["subscription"])
	}
	if mailAgain := sub(); mailAgain["created"] != false || mailAgain["subscription"] != mail["subscription"] || mailAgain["format"] != "full" {
		t.Errorf("email again: %v; want subscription %v, format untouched", mailAgain, mail["subscription"])
	}

	code, _, errs := cli("subscription", "set", "--email", "r@example.com", "--feed", feed, "--format", "title")
	if code != 2 || !strings.Contains(errs, "2 places") || !strings.Contains(errs, "--channel") {
		t.Errorf("set without --channel on two deliveries: exit %d, %q; want a usage error listing them", code, errs)
	}
	set := must("subscription", "set", "--email", "r@example.com", "--feed", feed, "--channel", "email", "--exclude", "ads")
	if set["subscription"] != mail["subscription"] || set["exclude"] != "ads" || set["channel"] != "email" {
		t.Errorf("set --channel email: %v", set)
	}
	set = must("subscription", "set", "--email", "r@example.com", "--feed", feed, "--channel", "webhook", "--format", "full")
	if set["subscription"] != hook["subscription"] || set["exclude"] != "" || set["format"] != "full" {
		t.Errorf("set --channel webhook: %v; want the webhook's own filters", set)
	}

	p := must("pause", "--email", "r@example.com", "--feed", feed, "--channel", "webhook")
	if ids, _ := p["subscriptions"].([]any); len(ids) != 1 || ids[0] != hook["subscription"] {
		t.Errorf("pause --channel webhook: %v; want the webhook only", p)
	}
	p = must("resume", "--email", "r@example.com", "--feed", feed)
	if ids, _ := p["subscriptions"].([]any); len(ids) != 2 {
		t.Errorf("resume --feed: %v; want both deliveries", p)
	}
	if code, _, errs := cli("pause", "--email", "r@example.com", "--feed", feed, "--channel", "slack"); code == 0 || !strings.Contains(errs, "no delivery") {
		t.Errorf("pause a delivery the person does not have: exit %d, %q", code, errs)
	}

	_, out, _ := cli("account", "export", "--email", "r@example.com")
	if strings.Count(out, `"feed_url"`) != 2 || !strings.Contains(out, "https://hooks.example.org/in") {
		t.Errorf("export: want both deliveries\n%s", out)
	}
	_, out, _ = cli("export-opml", "--email", "r@example.com")
	if n := strings.Count(out, "<outline"); n != 1 {
		t.Errorf("export-opml: %d outlines, want one for the feed\n%s", n, out)
	}
	file := filepath.Join(t.TempDir(), "list.opml")
	if err := os.WriteFile(file, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	rep := must("import-opml", "--email", "r@example.com", file)
	if added, _ := rep["added"].([]any); len(added) != 0 {
		t.Errorf("importing the exported list again: %v; want nothing added", rep)
	}
	_, out, _ = cli("account", "export", "--email", "r@example.com")
	if n := strings.Count(out, `"feed_url"`); n != 2 {
		t.Errorf("after the import: %d subscriptions, want still 2", n)
	}
}
