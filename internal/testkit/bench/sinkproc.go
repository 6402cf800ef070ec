package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/feedmail/feedmail/internal/testkit/smtptest"
)

// The outbox scenario's SMTP sink runs in a child process, feedbench (or
// the test binary) started again with childEnv set, so that the bench
// process's CPU is feedmail's and the sink's is reported on its own.
const (
	childEnv  = "FEEDBENCH_CHILD"
	sinkRole  = "smtp-sink"
	sinkReady = "smtp-sink-ready" // first word of the child's one stdout line
)

// RunChildRole runs the role FEEDBENCH_CHILD names, when it is set, until
// SIGTERM or SIGINT, and returns the exit code and true; it returns false at
// once in any other process. cmd/feedbench's main and the bench's tests
// call it first, so that the bench can start itself as its SMTP sink.
func RunChildRole() (code int, ok bool) {
	role := os.Getenv(childEnv)
	if role == "" {
		return 0, false
	}
	if role != sinkRole {
		fmt.Fprintf(os.Stderr, "feedbench: unknown %s=%q\n", childEnv, role)
		return 2, true
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := serveSink(ctx, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "feedbench: smtp sink: %v\n", err)
		return 1, true
	}
	return 0, true
}

// sinkStats is what the child answers at /stats: its pid, the messages
// its sink accepted and its own CPU time so far.
type sinkStats struct {
	PID   int           `json:"pid"`
	Count int           `json:"count"`
	CPU   time.Duration `json:"cpu_ns"`
}

// serveSink runs a discarding SMTP sink and an HTTP server answering
// /stats, both on loopback, writes "smtp-sink-ready <smtp URL> <stats
// URL>" to out and serves until ctx ends. It returns why it could not.
func serveSink(ctx context.Context, out io.Writer) error {
	sink, err := smtptest.Start(smtptest.Options{Discard: true})
	if err != nil {
		return err
	}
	defer func() { _ = sink.Close() }()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("stats listener: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(sinkStats{PID: os.Getpid(), Count: sink.Count(), CPU: processCPU()})
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	if _, err := fmt.Fprintf(out, "%s %s http://%s/stats\n", sinkReady, sink.URL(), ln.Addr()); err != nil {
		_ = srv.Close()
		return fmt.Errorf("announce: %w", err)
	}
	select {
	case <-ctx.Done():
	case err := <-served:
		return fmt.Errorf("stats server: %w", err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}

// mailSink is the outbox scenario's SMTP sink: a child process (proc set)
// or, when that could not start, a server in this process (own set, why
// saying what failed).
type mailSink struct {
	url   string
	proc  *child
	stats string // the child's /stats URL
	hc    *http.Client
	own   *smtptest.Server
	why   string
}

// startMailSink returns the sink in a child process, or in this process
// when the child cannot start (the reason is logged and kept in why).
func startMailSink(ctx context.Context, log *slog.Logger) (*mailSink, error) {
	s, err := startSinkChild(ctx)
	if err == nil {
		return s, nil
	}
	log.Warn("bench: the SMTP sink runs in this process", "err", err)
	own, err2 := smtptest.Start(smtptest.Options{Discard: true})
	if err2 != nil {
		return nil, fmt.Errorf("start the SMTP sink: %w", err2)
	}
	return &mailSink{url: own.URL(), own: own, why: err.Error()}, nil
}

// startSinkChild starts this executable as the sink and returns it once
// it has said where it listens (within 15 s), or the error.
func startSinkChild(ctx context.Context) (*mailSink, error) {
	bin, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("own executable: %w", err)
	}
	c, err := startChild("SMTP sink", bin, append(os.Environ(), childEnv+"="+sinkRole), true)
	if err != nil {
		return nil, err
	}
	var f []string
	err = waitFor(ctx, 15*time.Second, "the SMTP sink's address", func() string { return c.out.tail(3) }, func() bool {
		for _, l := range c.lines.get() {
			if g := strings.Fields(l); len(g) == 3 && g[0] == sinkReady {
				f = g
				return true
			}
		}
		return false
	}, c)
	if err != nil {
		_ = c.stop(5 * time.Second)
		return nil, err
	}
	return &mailSink{url: f[1], proc: c, stats: f[2], hc: &http.Client{Timeout: 10 * time.Second}}, nil
}

// read returns the sink's pid, count and (in a child only) CPU so far.
func (s *mailSink) read(ctx context.Context) (sinkStats, error) {
	if s.own != nil {
		return sinkStats{PID: os.Getpid(), Count: s.own.Count()}, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.stats, nil)
	if err != nil {
		return sinkStats{}, err
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return sinkStats{}, fmt.Errorf("SMTP sink stats: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	var st sinkStats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return sinkStats{}, fmt.Errorf("SMTP sink stats: %w", err)
	}
	return st, nil
}

// count returns the messages the sink accepted so far, -1 when it cannot
// tell (for progress lines only).
func (s *mailSink) count(ctx context.Context) int {
	st, err := s.read(ctx)
	if err != nil {
		return -1
	}
	return st.Count
}

// close stops the child by its pid, or closes the in-process server.
func (s *mailSink) close(log *slog.Logger) {
	if s.own != nil {
		_ = s.own.Close()
		return
	}
	if err := s.proc.stop(5 * time.Second); err != nil {
		log.Warn("bench: stopping the SMTP sink", "err", err)
	}
}

// note says where the sink ran and, in its own process, its CPU per email
// in the timed part and in the bare loop, which the row's figures leave out.
func (s *mailSink) note(use *SinkUse, n int) string {
	if !use.Separate {
		return "SMTP sink in this process, its CPU counted above (its own process failed: " + s.why + ")"
	}
	return fmt.Sprintf("SMTP sink in its own process: %s CPU/email, %s in the bare loop, not counted above",
		perUnit(use.CPU, n), perUnit(use.BareCPU, n))
}

// smtpSink returns the run's SMTP sink, started on first use and stopped
// by close.
func (e *env) smtpSink(ctx context.Context) (*mailSink, error) {
	if e.sink == nil {
		s, err := startMailSink(ctx, e.cfg.Log)
		if err != nil {
			return nil, err
		}
		e.sink = s
		e.cleanup = append(e.cleanup, func() { s.close(e.cfg.Log) })
	}
	return e.sink, nil
}
