package mailer

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/wneessen/go-mail"
)

func TestMaildirDelivers(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mail")
	clk := clock.NewFake(time.Date(2026, 3, 4, 5, 6, 7, 123456000, time.UTC))
	md, err := NewMaildir(dir, WithClock(clk), WithHostname("box/a:b"))
	if err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"tmp", "new", "cur"} {
		if st, err := os.Stat(filepath.Join(dir, sub)); err != nil || !st.IsDir() {
			t.Fatalf("%s/ not created: %v", sub, err)
		}
	}
	msgs := itemsTo(t, "a@example.org", "b@example.org")
	for i, err := range md.Send(context.Background(), msgs) {
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	if err := md.Close(); err != nil {
		t.Fatal(err)
	}
	if tmp, _ := os.ReadDir(filepath.Join(dir, "tmp")); len(tmp) != 0 {
		t.Errorf("%d files left in tmp/", len(tmp))
	}
	entries, err := os.ReadDir(filepath.Join(dir, "new"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Fatalf("%d files in new/, want 2", len(entries))
	}
	nameRe := regexp.MustCompile(`^1772600767\.M123456P\d+Q[12]\.box\\057a\\072b$`)
	seen := map[string]bool{}
	for _, e := range entries {
		if !nameRe.MatchString(e.Name()) {
			t.Errorf("file name %q", e.Name())
		}
		raw, err := os.ReadFile(filepath.Join(dir, "new", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(raw, []byte("\r\n")) {
			t.Error("CRLF in a Maildir file")
		}
		if first, _, _ := bytes.Cut(raw, []byte("\n")); !regexp.MustCompile(`^Return-Path: <[^<>]+@[^<>]+>$`).Match(first) {
			t.Errorf("first line %q, want Return-Path: <address>", first)
		}
		p := parseRaw(t, raw)
		seen[p.header.Get("To")] = true
		if p.get("Subject") != "Hello, world" || p.text == "" || p.html == "" {
			t.Errorf("message did not parse back: subject %q", p.get("Subject"))
		}
		if info, _ := e.Info(); info.Mode().Perm() != 0o600 {
			t.Errorf("file mode %v", info.Mode().Perm())
		}
	}
	if !seen["<a@example.org>"] || !seen["<b@example.org>"] {
		t.Errorf("recipients %v", seen)
	}
}

func TestMaildirFullDisk(t *testing.T) {
	dir := t.TempDir()
	calls := 0
	full := func(path string, data []byte) error {
		calls++
		// What a real write returns on a full disk, after creating the file.
		if err := os.WriteFile(path, data[:10], 0o600); err != nil {
			return err
		}
		return &fs.PathError{Op: "write", Path: path, Err: syscall.ENOSPC}
	}
	md, err := NewMaildir(dir, WithWriteFile(full))
	if err != nil {
		t.Fatal(err)
	}
	errs := md.Send(context.Background(), itemsTo(t, "a@example.org", "b@example.org"))
	for i, err := range errs {
		if !errors.Is(err, ErrTemporary) || !errors.Is(err, syscall.ENOSPC) {
			t.Errorf("message %d: %v, want temporary ENOSPC", i, err)
		}
	}
	if calls != 2 {
		t.Errorf("write attempted %d times", calls)
	}
	for _, sub := range []string{"tmp", "new"} {
		if files, _ := os.ReadDir(filepath.Join(dir, sub)); len(files) != 0 {
			t.Errorf("%d partial files left in %s/", len(files), sub)
		}
	}
}

func TestMaildirErrors(t *testing.T) {
	if _, err := NewMaildir(" "); err == nil {
		t.Error("empty path accepted")
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := NewMaildir(file); err == nil {
		t.Error("a file accepted as Maildir")
	}
	md, err := NewMaildir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	errs := md.Send(ctx, itemsTo(t, "a@example.org"))
	if !errors.Is(errs[0], ErrTemporary) || !errors.Is(errs[0], context.Canceled) {
		t.Errorf("cancelled: %v", errs[0])
	}
	errs = md.Send(context.Background(), nil)
	if len(errs) != 0 {
		t.Errorf("empty batch: %v", errs)
	}
	if err := md.Send(context.Background(), []*mail.Msg{nil})[0]; !errors.Is(err, ErrPermanent) {
		t.Errorf("nil message: %v, want permanent", err)
	}
}

// Maildir satisfies Transport, as does SMTPTransport.
var (
	_ Transport = (*Maildir)(nil)
	_ Transport = (*SMTPTransport)(nil)
)
