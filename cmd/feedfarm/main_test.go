package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/testkit/testutil"
)

func TestRun(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-listen", "127.0.0.1:0", "-feeds", "4", "-items", "2", "-publish-every", "20ms"}, pw, io.Discard)
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	var urls []string
	for len(urls) < 4 && sc.Scan() {
		urls = append(urls, sc.Text())
	}
	go io.Copy(io.Discard, pr)
	if len(urls) != 4 || !strings.HasSuffix(urls[3], "/f/4") {
		t.Fatalf("printed %q", urls)
	}
	get := func(url string) string {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", url, resp.StatusCode)
		}
		return string(b)
	}
	base := strings.TrimSuffix(urls[0], "/f/1")
	if opml := get(base + "/opml"); strings.Count(opml, "<outline ") != 4 {
		t.Fatalf("OPML:\n%s", opml)
	}
	first := get(urls[0])
	testutil.Eventually(t, 10*time.Second, func() bool { return get(urls[0]) != first }, "feed 1 never got a new item")
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not stop")
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-formats", "rss,xml"},
		{"-validators", "some"},
		{"-feeds", "-1"},
		{"extra"},
		{"-nope"},
		{"-log-level", "loud"},
		{"-fault-500", "2"},
		{"-fault-reset", "0.6", "-fault-500", "0.6"},
		{"-publish-log", "/nonexistent/dir/published.jsonl"},
	} {
		if err := run(t.Context(), append(args, "-listen", "127.0.0.1:0"), io.Discard, io.Discard); err == nil {
			t.Errorf("run(%q) accepted", args)
		}
	}
}
