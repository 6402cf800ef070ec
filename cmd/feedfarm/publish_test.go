package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/testkit/farm"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
)

// lockedBuffer is a bytes.Buffer safe for the logger and the test at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startRun runs feedfarm with args and returns the feed URLs it printed,
// its stderr, and the function that stops it and returns run's error.
func startRun(t *testing.T, nfeeds int, args ...string) ([]string, *lockedBuffer, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	stderr := &lockedBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"-listen", "127.0.0.1:0"}, args...), pw, stderr)
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	var urls []string
	for len(urls) < nfeeds && sc.Scan() {
		urls = append(urls, sc.Text())
	}
	go io.Copy(io.Discard, pr)
	if len(urls) != nfeeds {
		cancel()
		t.Fatalf("printed %q; stderr:\n%s", urls, stderr.String())
	}
	return urls, stderr, func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("run did not stop")
			return nil
		}
	}
}

func call(t *testing.T, method, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// TestFaultsAndPublishLog: the fault flags fail feed requests and are
// counted at /_farm/faults and on stderr at exit; publishing starts paused
// and, once switched on, every item published is a line of -publish-log.
func TestFaultsAndPublishLog(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "published.jsonl")
	urls, stderr, stop := startRun(t, 2, "-feeds", "2", "-items", "1", "-publish-every", "20ms",
		"-publish-paused", "-publish-log", logPath, "-fault-500", "1", "-fault-seed", "3")
	base := strings.TrimSuffix(urls[0], "/f/1")

	if code, _ := call(t, "GET", urls[0]); code != 500 {
		t.Errorf("feed answered %d, want the injected 500", code)
	}
	if code, body := call(t, "GET", base+farm.FaultsPath); code != 200 || body != `{"requests":1,"reset":0,"timeout":0,"status_500":1}` {
		t.Errorf("%s: %d %s", farm.FaultsPath, code, body)
	}
	if code, body := call(t, "GET", base+publishPath); code != 200 || body != `{"on":false}` {
		t.Errorf("publishing state: %d %s", code, body)
	}
	if b, err := os.ReadFile(logPath); err != nil || len(b) != 0 {
		t.Fatalf("log while paused: %q, %v", b, err)
	}
	if code, _ := call(t, "POST", base+publishPath+"?on=maybe"); code != 400 {
		t.Errorf("on=maybe: %d, want 400", code)
	}
	if code, body := call(t, "POST", base+publishPath+"?on=1"); code != 200 || body != `{"on":true}` {
		t.Fatalf("switching on: %d %s", code, body)
	}
	testutil.EventuallySeen(t, 10*time.Second, func() (bool, string) {
		b, _ := os.ReadFile(logPath)
		return bytes.Count(b, []byte("\n")) >= 3, string(b)
	}, "three publications in the log")
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	checkPublishLog(t, logPath, urls)
	if !strings.Contains(stderr.String(), `feedfarm: faults {"requests":1,"reset":0,"timeout":0,"status_500":1}`) {
		t.Errorf("no fault counts on stderr:\n%s", stderr.String())
	}
}

// checkPublishLog checks that the log's lines are the round robin's items,
// each published no earlier than the previous and written after.
func checkPublishLog(t *testing.T, path string, urls []string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var prev time.Time
	for i, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		var p farm.Publication
		if err := json.Unmarshal([]byte(line), &p); err != nil {
			t.Fatalf("line %d %q: %v", i, line, err)
		}
		feed := urls[i%2]
		item := "/i/" + strconv.Itoa(2+i/2)
		if p.Feed != feed || p.Link != feed+item || !strings.HasPrefix(p.GUID, "farm:f") ||
			p.Published.Before(prev) || p.At.Before(p.Published) {
			t.Errorf("line %d = %s, want item %s of %s after %v", i, line, item, feed, prev)
		}
		prev = p.Published
	}
}

// TestPublishBurst: POST ?burst=N publishes one item in each of the next N
// feeds round robin, every feed at most once a burst.
func TestPublishBurst(t *testing.T) {
	tests := []struct {
		name   string
		bursts []int
		want   []int // 1 for each feed that published
	}{
		{"three of five", []int{3}, []int{1, 1, 1, 0, 0}},
		{"wraps round", []int{3, 1}, []int{1, 1, 1, 1, 0}},
		{"more than every feed", []int{9}, []int{1, 1, 1, 1, 1}},
		{"none", []int{0}, []int{0, 0, 0, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fm := farm.New(clock.Real{})
			p := &publisher{log: slog.New(slog.DiscardHandler)}
			before := make([]string, 5)
			for i := range 5 {
				f := fm.AddFeed(farm.Spec{ItemCount: 2, ETag: farm.ETagStrong})
				p.feeds = append(p.feeds, f)
				before[i] = f.ETag()
			}
			for _, n := range tt.bursts {
				rec := httptest.NewRecorder()
				p.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, publishPath+"?burst="+strconv.Itoa(n), nil))
				if rec.Code != http.StatusOK {
					t.Fatalf("burst=%d answered %d: %s", n, rec.Code, rec.Body)
				}
			}
			for i, f := range p.feeds {
				if got := btoi(f.ETag() != before[i]); got != tt.want[i] {
					t.Errorf("feed %d: published %d, want %d (all %v)", i, got, tt.want[i], tt.want)
				}
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestHubShareNotifies: with -hub and -hub-share 0.5 every second feed
// advertises the hub, and each item published in one of those (and only
// those) is notified to the hub as hub.mode=publish&hub.url=<feed>.
func TestHubShareNotifies(t *testing.T) {
	var mu sync.Mutex
	notified := map[string]int{}
	hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		if r.PostForm.Get("hub.mode") == "publish" {
			mu.Lock()
			notified[r.PostForm.Get("hub.url")]++
			mu.Unlock()
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	defer hub.Close()
	urls, stderr, stop := startRun(t, 4, "-feeds", "4", "-items", "1", "-publish-every", "10ms", "-publish-all",
		"-hub", hub.URL, "-hub-share", "0.5")
	for i, u := range urls {
		_, body := call(t, "GET", u)
		if got, want := strings.Contains(body, hub.URL), farm.HubAdvertised(i, 0.5); got != want {
			t.Errorf("feed %d advertises the hub: %v, want %v", i, got, want)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n1, n3 := notified[urls[1]], notified[urls[3]]
		mu.Unlock()
		if n1 > 0 && n3 > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("hub notified of %v, want feeds 1 and 3; stderr:\n%s", notified, stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if notified[urls[0]] != 0 || notified[urls[2]] != 0 {
		t.Errorf("hub notified of feeds that do not advertise it: %v", notified)
	}
}
