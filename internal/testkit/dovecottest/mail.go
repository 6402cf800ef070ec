package dovecottest

import (
	"testing"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
)

// Dial returns a client logged in over imaps; t.Cleanup logs it out.
func (s *Server) Dial(t testing.TB) *imapclient.Client {
	t.Helper()
	c, err := imapclient.DialTLS(s.IMAPSAddr, &imapclient.Options{TLSConfig: s.TLSConfig()})
	if err != nil {
		t.Fatalf("dovecottest: dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Login(s.User, s.Password).Wait(); err != nil {
		t.Fatalf("dovecottest: login: %v", err)
	}
	return c
}

// Append adds the messages to folder (created when missing), in order, so
// their UIDs ascend in the order given.
func (s *Server) Append(t testing.TB, folder string, msgs ...[]byte) {
	t.Helper()
	c := s.Dial(t)
	defer func() { c.Logout().Wait() }()
	if folder != "INBOX" {
		if list, err := c.List("", folder, nil).Collect(); err == nil && len(list) == 0 {
			if err := c.Create(folder, nil).Wait(); err != nil {
				t.Fatalf("dovecottest: create %q: %v", folder, err)
			}
		}
	}
	for i, m := range msgs {
		cmd := c.Append(folder, int64(len(m)), nil)
		if _, err := cmd.Write(m); err != nil {
			t.Fatalf("dovecottest: append %d: %v", i, err)
		}
		if err := cmd.Close(); err != nil {
			t.Fatalf("dovecottest: append %d: %v", i, err)
		}
		if _, err := cmd.Wait(); err != nil {
			t.Fatalf("dovecottest: append %d: %v", i, err)
		}
	}
}

// Count returns how many messages folder holds (0 when it does not exist).
func (s *Server) Count(t testing.TB, folder string) int {
	t.Helper()
	c := s.Dial(t)
	defer func() { c.Logout().Wait() }()
	st, err := c.Status(folder, &imap.StatusOptions{NumMessages: true}).Wait()
	if err != nil || st.NumMessages == nil {
		return 0
	}
	return int(*st.NumMessages)
}

// Messages returns the messages of folder, whole, in UID order.
func (s *Server) Messages(t testing.TB, folder string) [][]byte {
	t.Helper()
	c := s.Dial(t)
	defer func() { c.Logout().Wait() }()
	sel, err := c.Select(folder, &imap.SelectOptions{ReadOnly: true}).Wait()
	if err != nil {
		t.Fatalf("dovecottest: select %q: %v", folder, err)
	}
	if sel.NumMessages == 0 {
		return nil
	}
	body := &imap.FetchItemBodySection{Peek: true}
	bufs, err := c.Fetch(imap.SeqSet{{Start: 1, Stop: 0}}, &imap.FetchOptions{UID: true, BodySection: []*imap.FetchItemBodySection{body}}).Collect()
	if err != nil {
		t.Fatalf("dovecottest: fetch %q: %v", folder, err)
	}
	var out [][]byte
	for _, b := range bufs {
		out = append(out, b.FindBodySection(body))
	}
	return out
}
