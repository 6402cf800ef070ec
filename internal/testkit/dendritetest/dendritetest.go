// Package dendritetest starts a real Matrix homeserver (Dendrite) for a
// test: in a private folder, on a loopback port, with SQLite, one user and
// a room, and stops it by its PID at cleanup. It reads the room's messages
// back as a client does. Test infrastructure only: never imported by the
// product.
//
// Dendrite's commands (dendrite, generate-config, generate-keys,
// create-account) are looked up in $FEEDMAIL_DENDRITE_DIR, then on PATH;
// CI installs them with
//
//	GOBIN=DIR go install github.com/matrix-org/dendrite/cmd/{dendrite,generate-config,generate-keys,create-account}@v0.13.8
//
// Without them the test skips (fails under CI=true).
package dendritetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/testkit/proc"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
)

// Server is a running Dendrite with one user and one room.
type Server struct {
	// URL is the homeserver's base URL (http://127.0.0.1:port).
	URL string
	// User is the user's Matrix ID; Token its access token.
	User, Token string
	// Room is the ID of a room the user created and is in.
	Room string
	// Dir holds the configuration, databases and log.
	Dir string

	cmd    *exec.Cmd
	exited chan struct{}
}

// Start starts Dendrite for t, registers a user, logs in and creates a
// room; t.Cleanup stops it.
func Start(t testing.TB) *Server {
	t.Helper()
	bins, err := commands()
	if err != nil {
		testutil.SkipOrFail(t, "dendrite is not installed: "+err.Error())
	}
	s := &Server{Dir: t.TempDir()}
	addr := proc.FreeAddr(t)
	s.URL = "http://" + addr
	if err := s.configure(bins); err != nil {
		t.Fatalf("dendritetest: %v", err)
	}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("dendrite log (%s):\n%s", s.Dir, s.Logs())
		}
	})
	if err := s.start(bins["dendrite"], addr); err != nil {
		t.Fatalf("dendritetest: %v", err)
	}
	if err := s.register(bins["create-account"]); err != nil {
		t.Fatalf("dendritetest: %v\n%s", err, s.Logs())
	}
	return s
}

// commands finds Dendrite's four commands.
func commands() (map[string]string, error) {
	out := map[string]string{}
	for _, name := range []string{"dendrite", "generate-config", "generate-keys", "create-account"} {
		if d := os.Getenv("FEEDMAIL_DENDRITE_DIR"); d != "" {
			if p := filepath.Join(d, name); isExec(p) {
				out[name] = p
				continue
			}
		}
		p, err := exec.LookPath(name)
		if err != nil {
			return nil, fmt.Errorf("%s not in $FEEDMAIL_DENDRITE_DIR or PATH", name)
		}
		out[name] = p
	}
	return out, nil
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// configure writes the signing key and a CI configuration (SQLite files in
// Dir, no rate limits, registration only with the shared secret).
func (s *Server) configure(bins map[string]string) error {
	key := exec.Command(bins["generate-keys"], "--private-key", "matrix_key.pem")
	key.Dir = s.Dir
	if out, err := key.CombinedOutput(); err != nil {
		return fmt.Errorf("generate-keys: %w: %s", err, out)
	}
	gen := exec.Command(bins["generate-config"], "-ci", "-dir", s.Dir, "-server", "localhost")
	gen.Dir = s.Dir
	conf, err := gen.Output()
	if err != nil {
		return fmt.Errorf("generate-config: %w", err)
	}
	conf = bytes.Replace(conf, []byte("registration_disabled: false"), []byte("registration_disabled: true"), 1)
	return os.WriteFile(filepath.Join(s.Dir, "dendrite.yaml"), conf, 0o600)
}

// start runs dendrite and waits until its client API answers.
func (s *Server) start(bin, addr string) error {
	log, err := os.Create(filepath.Join(s.Dir, "dendrite.log"))
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.Command(bin, "-config", "dendrite.yaml", "-http-bind-address", addr, "-https-bind-address", "")
	cmd.Dir, cmd.Stdout, cmd.Stderr = s.Dir, log, log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start dendrite: %w", err)
	}
	s.cmd, s.exited = cmd, make(chan struct{})
	go func() { cmd.Wait(); close(s.exited) }()
	deadline := time.Now().Add(90 * time.Second)
	for {
		resp, err := http.Get(s.URL + "/_matrix/client/versions")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-s.exited:
			return fmt.Errorf("dendrite exited at start:\n%s", s.Logs())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s/_matrix/client/versions not answering 200 after 90s (last error %v):\n%s", s.URL, err, s.Logs())
		}
	}
}

// register creates the user with the shared secret, logs in and creates
// the room.
func (s *Server) register(bin string) error {
	const user, password = "feedmail", "feedmail-test-password"
	ca := exec.Command(bin, "-config", "dendrite.yaml", "-username", user, "-password", password, "-url", s.URL)
	ca.Dir = s.Dir
	if out, err := ca.CombinedOutput(); err != nil {
		return fmt.Errorf("create-account: %w: %s", err, out)
	}
	var login struct {
		UserID      string `json:"user_id"`
		AccessToken string `json:"access_token"`
	}
	err := s.call(context.Background(), "POST", "/_matrix/client/v3/login", "", map[string]any{
		"type": "m.login.password", "identifier": map[string]string{"type": "m.id.user", "user": user}, "password": password,
	}, &login)
	if err != nil {
		return fmt.Errorf("login: %w", err)
	}
	s.User, s.Token = login.UserID, login.AccessToken
	var room struct {
		RoomID string `json:"room_id"`
	}
	if err := s.call(context.Background(), "POST", "/_matrix/client/v3/createRoom", s.Token, map[string]any{"name": "feeds"}, &room); err != nil {
		return fmt.Errorf("create room: %w", err)
	}
	s.Room = room.RoomID
	return nil
}

// Message is one m.room.message event of the room.
type Message struct {
	EventID string `json:"event_id"`
	Sender  string `json:"sender"`
	Content struct {
		MsgType       string `json:"msgtype"`
		Body          string `json:"body"`
		Format        string `json:"format"`
		FormattedBody string `json:"formatted_body"`
	} `json:"content"`
}

// Messages returns the room's messages, oldest first (up to 1,000).
func (s *Server) Messages(ctx context.Context) ([]Message, error) {
	var page struct {
		Chunk []struct {
			Type string `json:"type"`
			Message
		} `json:"chunk"`
	}
	path := "/_matrix/client/v3/rooms/" + url.PathEscape(s.Room) + "/messages?dir=b&limit=1000"
	if err := s.call(ctx, "GET", path, s.Token, nil, &page); err != nil {
		return nil, err
	}
	var out []Message
	for i := len(page.Chunk) - 1; i >= 0; i-- {
		if e := page.Chunk[i]; e.Type == "m.room.message" {
			out = append(out, e.Message)
		}
	}
	return out, nil
}

// WaitMessages returns the room's messages once ok says they are what the
// test waits for, or an error after within saying what the room held: the
// homeserver answers a send before its timeline shows the event.
func (s *Server) WaitMessages(ctx context.Context, within time.Duration, ok func([]Message) bool) ([]Message, error) {
	deadline := time.Now().Add(within)
	for {
		msgs, err := s.Messages(ctx)
		if err == nil && ok(msgs) {
			return msgs, nil
		}
		if time.Now().After(deadline) {
			return msgs, fmt.Errorf("the room did not show the messages awaited within %v; it held %d (last error %v)", within, len(msgs), err)
		}
		select {
		case <-ctx.Done():
			return msgs, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Send sends a text message into the room as the test's user, with txn as
// its transaction id (a marker the test can wait for).
func (s *Server) Send(ctx context.Context, txn, body string) error {
	path := "/_matrix/client/v3/rooms/" + url.PathEscape(s.Room) + "/send/m.room.message/" + url.PathEscape(txn)
	var out struct {
		EventID string `json:"event_id"`
	}
	return s.call(ctx, "PUT", path, s.Token, map[string]string{"msgtype": "m.text", "body": body}, &out)
}

// call makes a client-server API request with a JSON body (when in is not
// nil) and decodes a 200 answer into out.
func (s *Server) call(ctx context.Context, method, path, token string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.URL+path, body)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(b)))
	}
	return json.Unmarshal(b, out)
}

// Logs returns Dendrite's log so far.
func (s *Server) Logs() string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "dendrite.log"))
	return string(b)
}

// Stop stops Dendrite (SIGTERM to its PID, SIGKILL after 10 s) and waits
// for it. Stopping a stopped server does nothing.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	select {
	case <-s.exited:
	default:
		s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(10 * time.Second):
			s.cmd.Process.Kill()
			<-s.exited
		}
	}
	s.cmd = nil
}
