package main

import (
	"context"
	"io"
	"testing"

	"github.com/feedmail/feedmail/internal/testkit/storetest"
	"github.com/feedmail/feedmail/mailer"
)

// TestMessageIDsPerInstall opens two fresh databases with the same
// FEEDMAIL_FROM, each generating its own secret on first run (and a third
// pair with FEEDMAIL_SECRET set): the same row numbers never give the same
// Message-ID in two installs, and reopening an install (a restart, a retry
// of the same email) gives the same ids again.
func TestMessageIDsPerInstall(t *testing.T) {
	open := func(dsn, secret string) mailer.Sender {
		t.Helper()
		env := map[string]string{"FEEDMAIL_DATABASE_URL": dsn, "FEEDMAIL_FROM": "feedmail@example.com",
			"FEEDMAIL_SECRET": secret, "FEEDMAIL_LOG_LEVEL": "warn"}
		a, err := newApp(environOf(env), io.Discard, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		defer a.close()
		if _, err := a.openStore(context.Background()); err != nil {
			t.Fatal(err)
		}
		return a.sender()
	}
	ids := func(s mailer.Sender) []string {
		return []string{s.ItemMessageID(1, 10), s.ItemMessageID(1, 1), s.ItemMessageID(2, 3),
			s.MessageID("digest.1"), s.MessageID("notice-1")}
	}
	dsnA, dsnB := storetest.FreshDSN(t, storetest.URL()), storetest.FreshDSN(t, storetest.URL())
	installs := map[string][]string{
		"A (generated secret)": ids(open(dsnA, "")),
		"B (generated secret)": ids(open(dsnB, "")),
		"C (FEEDMAIL_SECRET)":  ids(open(storetest.FreshDSN(t, storetest.URL()), "secret-of-install-c-0123")),
		"D (FEEDMAIL_SECRET)":  ids(open(storetest.FreshDSN(t, storetest.URL()), "secret-of-install-d-0123")),
		// Two installs given the same secret (a copied configuration).
		"E (C's secret)": ids(open(storetest.FreshDSN(t, storetest.URL()), "secret-of-install-c-0123")),
	}
	owner := map[string]string{}
	for name, list := range installs {
		for _, id := range list {
			if other, dup := owner[id]; dup {
				t.Errorf("installs %s and %s both make %s", other, name, id)
			}
			owner[id] = name
		}
	}
	for _, c := range []struct{ name, dsn string }{{"A (generated secret)", dsnA}, {"B (generated secret)", dsnB}} {
		again := ids(open(c.dsn, ""))
		for i, id := range again {
			if id != installs[c.name][i] {
				t.Errorf("install %s reopened: %s, was %s", c.name, id, installs[c.name][i])
			}
		}
	}
	t.Logf("install A: %v; install B: %v", installs["A (generated secret)"][:1], installs["B (generated secret)"][:1])
}
