package e2e

import (
	"os"
	"testing"
)

// TestMain removes the feedmail binary that procBinary built (once, for
// every test of the run that starts `feedmail serve` processes).
func TestMain(m *testing.M) {
	code := m.Run()
	if procBuild.dir != "" {
		_ = os.RemoveAll(procBuild.dir)
	}
	os.Exit(code)
}
