package bench

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
)

// TestMailSinkFallback checks that a sink child that cannot start (here:
// no time to) leaves the sink in this process, working, and says so.
func TestMailSinkFallback(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s, err := startMailSink(ctx, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer s.close(slog.New(slog.DiscardHandler))
	st, err := s.read(context.Background())
	if s.own == nil || s.proc != nil || err != nil || st.PID != os.Getpid() || st.Count != 0 {
		t.Fatalf("sink %+v, stats %+v, %v; want the in-process one", s, st, err)
	}
	if note := s.note(&SinkUse{PID: st.PID}, 1); !strings.Contains(note, "SMTP sink in this process, its CPU counted above") {
		t.Errorf("note %q", note)
	}
}
