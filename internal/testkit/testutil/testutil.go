// Package testutil holds the small helpers shared by the test suites: where
// the third-party corpus is and reading it, skipping or failing under CI,
// decoding a multipart email, a ResponseWriter that remembers its status,
// and polling a condition with a deadline instead of sleeping.
//
// Test infrastructure: never linked into cmd/feedmail.
package testutil

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// InCI reports whether the suite runs under CI (CI=true), where missing
// prerequisites fail the test instead of skipping it.
func InCI() bool { return os.Getenv("CI") == "true" }

// SkipOrFail skips the test with reason, or fails it under CI.
func SkipOrFail(t testing.TB, reason string) {
	t.Helper()
	if InCI() {
		t.Fatalf("required under CI=true: %s", reason)
	}
	t.Skip(reason)
}

// CorpusDir returns the folder of third-party feed and OPML files:
// $FEEDMAIL_CORPUS, else ../shared/corpus next to the repository.
// It skips (or fails under CI) when the folder is absent.
func CorpusDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("FEEDMAIL_CORPUS"); d != "" {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			return d
		}
		SkipOrFail(t, "FEEDMAIL_CORPUS="+d+" is not a folder")
	}
	if root := repoRoot(); root != "" {
		d := filepath.Join(root, "..", "shared", "corpus")
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			return d
		}
	}
	SkipOrFail(t, "corpus folder not found (set FEEDMAIL_CORPUS)")
	return ""
}

// repoRoot returns the folder holding go.mod above this file, or "".
func repoRoot() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return ""
	}
	for d := filepath.Dir(file); d != filepath.Dir(d); d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
	}
	return ""
}

// Eventually polls cond every few milliseconds until it returns true or the
// deadline passes, then fails the test with msg.
func Eventually(t testing.TB, within time.Duration, cond func() bool, msg string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s: %s", within, msg)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// EventuallySeen is Eventually for a condition that can say what it saw:
// when the deadline passes, the test fails with msg and the last seen.
func EventuallySeen(t testing.TB, within time.Duration, cond func() (ok bool, seen string), msg string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, seen := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s: %s; seen: %s", within, msg, seen)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
