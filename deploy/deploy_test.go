// Package deploy holds no Go code: what an operator installs with. Its
// test runs the commands docs/operations.md gives for checking them.
package deploy

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/testkit/testutil"
)

// documented returns the shell block after marker in docs/operations.md.
func documented(t *testing.T, marker string) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "<!-- "+marker+" -->\n```sh\n")
	block, _, closed := strings.Cut(rest, "```")
	if !ok || !closed {
		t.Fatalf("docs/operations.md has no sh block after <!-- %s -->", marker)
	}
	return block
}

// TestVerifyUnitAsDocumented runs the command docs/operations.md gives to
// check the systemd unit before installing, from a copy of the repository's
// layout with a built binary (a stand-in: verify only wants an executable
// there), and wants it to pass without a word, as CI's check does.
func TestVerifyUnitAsDocumented(t *testing.T) {
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		testutil.SkipOrFail(t, "systemd-analyze is not installed (Debian: apt-get install systemd)")
	}
	block := documented(t, "verify-unit")
	repo, tmp := t.TempDir(), t.TempDir()
	unit, err := os.ReadFile(filepath.Join("systemd", "feedmail.service"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(repo, "deploy", "systemd"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "deploy", "systemd", "feedmail.service"), unit, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "feedmail"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-eu", "-c", block)
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "PWD="+repo)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil || out.Len() > 0 {
		t.Fatalf("the documented check failed (%v):\n%s\n--- block:\n%s", err, out.String(), block)
	}
}
