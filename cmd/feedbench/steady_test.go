package main

import (
	"strings"
	"testing"
)

// TestSteadyBadInput checks that the steady scenario's flags are checked
// before anything is built or started: exit 2 with the usage lines.
func TestSteadyBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"--scenarios", "steady", "--warmup", "soon"},
		{"--scenarios", "steady", "--minutes", "0"},
		{"--scenarios", "steady", "--publish-share", "1.5"},
		{"--scenarios", "steady", "--cadence", "often"},
	} {
		code, out, errs := benchCLI(t, args...)
		if code != 2 || out != "" || !strings.Contains(errs, "--scenarios steady") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and the usage lines", args, code, out, errs)
		}
	}
}
