package main

import (
	"os"
	"testing"

	"github.com/feedmail/feedmail/internal/testkit/bench"
)

// TestMain lets the test binary, started again by the outbox scenario as
// its SMTP sink, run only that.
func TestMain(m *testing.M) {
	if code, ok := bench.RunChildRole(); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}
