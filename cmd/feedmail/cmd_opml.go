package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/opml"
	"github.com/feedmail/feedmail/internal/subscribe"
)

const (
	importOPMLUsage = "--email E [--digest NAME] [--confirmed] FILE   (FILE - reads standard input)"
	exportOPMLUsage = "--email E"
)

// parseInterspersed parses flags that may come before or after the
// positional arguments ("FILE --email E" as well as "--email E FILE").
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Args()[0])
		args = fs.Args()[1:]
	}
}

// importJSON is what import-opml prints.
type importJSON struct {
	Email     string                   `json:"email"`
	Confirmed bool                     `json:"confirmed"`
	Digest    string                   `json:"digest,omitempty"`
	Added     []subscribe.ImportResult `json:"added"`
	Already   []subscribe.ImportResult `json:"already"`
	Failed    []subscribe.ImportResult `json:"failed"`
}

// cmdImportOPML subscribes a person (created when missing) to every feed of
// an OPML file through the import use case. The JSON report says what was
// added, what was already there, and what failed and why; when any feed
// failed the command exits exPartial (3), so a script need not read it. A progress line
// (done, by outcome, feeds/s) goes to stderr when it is a terminal, and
// nothing when it is not. Without --confirmed the subscriptions wait
// for the person, who gets one email with a link to their account page to
// confirm them; with it they are active at once.
func cmdImportOPML(ctx context.Context, a *app, args []string) error {
	fs := flags(a, "import-opml")
	email := fs.String("email", "", "the person's email address (the account is created if missing)")
	digestName := fs.String("digest", "", "deliver the feeds into this existing digest (default: instant)")
	confirmed := fs.Bool("confirmed", false, "make the subscriptions active now, without asking the person")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if len(pos) != 1 {
		return fmt.Errorf("%w: give exactly one OPML file (or - for standard input)", errUsage)
	}
	addr, err := subscriberFlag(*email)
	if err != nil {
		return err
	}
	outlines, err := readOPML(pos[0])
	if err != nil {
		return err
	}
	svc, err := a.subscribeService(ctx)
	if err != nil {
		return err
	}
	u, err := a.ensureUser(ctx, addr)
	if err != nil {
		return err
	}
	// The operator is not limited (no Budget) and is told precise reasons.
	opt := subscribe.ImportOptions{Confirmed: *confirmed, KeepBouncing: true, StopOnError: true, PerFeed: 30 * time.Second,
		Detailed: true}
	out := importJSON{Email: u.Email, Confirmed: *confirmed}
	if *digestName != "" {
		dg, err := a.digestNamed(ctx, u, *digestName)
		if err != nil {
			return err
		}
		opt.DigestID, out.Digest = &dg.ID, dg.Name
	}
	show := a.progressLine()
	if show != nil {
		p := &importProgress{show: show, clk: a.clock, start: a.clock.Now()}
		opt.Progress = p.update
	}
	rep, err := svc.ImportOPML(ctx, u, outlines, opt)
	if show != nil {
		show("")
	}
	if err != nil {
		return err
	}
	out.Added, out.Already, out.Failed = nonNil(rep.Added), nonNil(rep.Already), nonNil(rep.Failed)
	if err := a.printJSON(out); err != nil {
		return err
	}
	if n := len(out.Failed); n > 0 {
		return fmt.Errorf("%w: %d of %d feeds failed (the report says why)", errPartial, n, n+len(out.Added)+len(out.Already))
	}
	return nil
}

// readOPML reads the outlines of an OPML file ("-": standard input).
func readOPML(name string) ([]opml.Outline, error) {
	var in io.Reader = os.Stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("open OPML file: %w", err)
		}
		defer f.Close()
		in = f
	}
	outlines, err := opml.Parse(in)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return outlines, nil
}

// cmdExportOPML prints a person's subscriptions as OPML on stdout.
func cmdExportOPML(ctx context.Context, a *app, args []string) error {
	s, u, err := a.personOnly(ctx, "export-opml", args)
	if err != nil {
		return err
	}
	return subscribe.ExportOPML(ctx, s, u, a.stdout)
}

// progressEvery is how often the import's progress line is redrawn at most.
const progressEvery = 200 * time.Millisecond

// importProgress draws an import's progress line: how much of the list is
// done, by outcome, and how fast, redrawn at most every progressEvery
// (and once at the end) however fast feeds are done.
type importProgress struct {
	show                   func(string)
	clk                    clock.Clock
	start, drawn           time.Time
	added, already, failed int
}

// update counts r and redraws the line when it is due (the import's
// Progress callback).
func (p *importProgress) update(done, total int, r subscribe.ImportResult) {
	switch r.Outcome {
	case subscribe.ImportAdded:
		p.added++
	case subscribe.ImportAlready:
		p.already++
	default:
		p.failed++
	}
	now := p.clk.Now()
	if done < total && now.Sub(p.drawn) < progressEvery {
		return
	}
	p.drawn = now
	line := fmt.Sprintf("import-opml: %d/%d feeds (%d%%): %d added, %d already, %d failed", done, total,
		done*100/max(total, 1), p.added, p.already, p.failed)
	if secs := now.Sub(p.start).Seconds(); secs >= 1 {
		line += fmt.Sprintf(", %.0f feeds/s", float64(done)/secs)
	}
	p.show(line)
}

// progressLine returns a function that shows one updating line on stderr
// when it is a terminal, nil otherwise (nothing is shown: stderr may be a
// log); "" clears the line.
func (a *app) progressLine() func(string) {
	f, ok := a.stderr.(*os.File)
	if !ok || !(isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())) {
		return nil
	}
	return func(s string) {
		const width = 100
		if len(s) > width {
			s = s[:width-1] + "…"
		}
		fmt.Fprintf(f, "\r\033[K%s", s)
	}
}

func nonNil(r []subscribe.ImportResult) []subscribe.ImportResult {
	if r == nil {
		return []subscribe.ImportResult{}
	}
	return r
}
