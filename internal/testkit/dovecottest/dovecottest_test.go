package dovecottest

import (
	"bytes"
	"fmt"
	"testing"
)

func TestRestartKeepsPortsAndMail(t *testing.T) {
	s := Start(t)
	var msgs [][]byte
	for i := range 3 {
		msgs = append(msgs, fmt.Appendf(nil, "Subject: m%d\r\nMessage-ID: <m%d@test>\r\n\r\nbody %d\r\n", i, i, i))
	}
	s.Append(t, "INBOX", msgs...)
	s.Append(t, "Other", msgs[0])
	pid, imaps, imap := s.PID(), s.IMAPSAddr, s.IMAPAddr
	if !s.Restart(t) {
		t.FailNow()
	}
	if s.PID() == pid || s.IMAPSAddr != imaps || s.IMAPAddr != imap {
		t.Errorf("after restart pid %d (was %d), addresses %s %s (were %s %s)", s.PID(), pid, s.IMAPSAddr, s.IMAPAddr, imaps, imap)
	}
	got := s.Messages(t, "INBOX")
	if len(got) != len(msgs) {
		t.Fatalf("INBOX holds %d messages after restart, want %d", len(got), len(msgs))
	}
	for i := range msgs {
		if !bytes.Equal(got[i], msgs[i]) {
			t.Errorf("message %d = %q, want %q", i, got[i], msgs[i])
		}
	}
	if n := s.Count(t, "Other"); n != 1 {
		t.Errorf("Other holds %d, want 1", n)
	}
	if n := s.Count(t, "Missing"); n != 0 {
		t.Errorf("a missing folder counts %d, want 0", n)
	}
}
