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

	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/notices"
	"github.com/feedmail/feedmail/internal/opml"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/web"
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
	Email     string             `json:"email"`
	Confirmed bool               `json:"confirmed"`
	Digest    string             `json:"digest,omitempty"`
	Added     []web.ImportResult `json:"added"`
	Already   []web.ImportResult `json:"already"`
	Failed    []web.ImportResult `json:"failed"`
}

// cmdImportOPML subscribes a person (created when missing) to every feed of
// an OPML file. Each new feed is fetched first; the JSON report says what
// was added, what was already there, and what failed and why. Progress goes
// to stderr when it is a terminal. Without --confirmed the subscriptions
// wait for the person, who gets one email with a link to their account page
// to confirm them; with it they are active at once.
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
	addr, err := creditsEmailFlag(*email)
	if err != nil {
		return err
	}
	var in io.Reader = os.Stdin
	if pos[0] != "-" {
		f, err := os.Open(pos[0])
		if err != nil {
			return fmt.Errorf("open OPML file: %w", err)
		}
		defer f.Close()
		in = f
	}
	outlines, err := opml.Parse(in)
	if err != nil {
		return fmt.Errorf("read %s: %w", pos[0], err)
	}
	s, err := a.openStore(ctx)
	if err != nil {
		return err
	}
	u, _, err := s.EnsureUser(ctx, addr)
	if err != nil {
		return err
	}
	var opt web.ImportOptions
	opt.Confirmed = *confirmed
	out := importJSON{Email: u.Email, Confirmed: *confirmed}
	if *digestName != "" {
		dg, err := s.DigestByName(ctx, u.ID, *digestName)
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("%s has no digest %q (create it with `feedmail digest set`)", u.Email, *digestName)
		}
		if err != nil {
			return err
		}
		opt.DigestID, out.Digest = &dg.ID, dg.Name
	}

	im := &web.Importer{Store: s, Parallel: 8, PerFeed: 30 * time.Second,
		Fetcher: fetcher.New(fetcher.Config{BaseURL: a.cfg.BaseURL, AllowPrivate: a.cfg.AllowPrivateNetworks})}
	progress := a.progressLine()
	rep, err := im.Import(ctx, u.ID, outlines, opt, func(done, total int, r web.ImportResult) {
		progress(fmt.Sprintf("[%d/%d] %s %s", done, total, r.Outcome, r.URL))
	})
	progress("")
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	if len(rep.Added) > 0 {
		if err := a.afterImport(ctx, s, u, len(rep.Added), *confirmed); err != nil {
			return err
		}
	}
	out.Added, out.Already, out.Failed = nonNil(rep.Added), nonNil(rep.Already), nonNil(rep.Failed)
	return a.printJSON(out)
}

// afterImport makes confirmed imports count as a confirmation (trial
// credits, once) and asks the person to confirm unconfirmed ones.
func (a *app) afterImport(ctx context.Context, s *store.Store, u *store.User, added int, confirmed bool) error {
	if confirmed {
		if _, err := s.MarkUserConfirmed(ctx, u.ID); err != nil {
			return err
		}
		_, _, err := s.GrantTrialOnce(ctx, u.ID, a.cfg.TrialCredits)
		return err
	}
	now := a.clock.Now()
	lk := links.New(a.cfg.BaseURL, a.tokens, a.cfg.From)
	key, n := notices.ImportConfirm(lk, now, u.ID, u.Email, added)
	_, err := s.QueueNotice(ctx, u.ID, key, n)
	return err
}

// cmdExportOPML prints a person's subscriptions as OPML on stdout.
func cmdExportOPML(ctx context.Context, a *app, args []string) error {
	fs := flags(a, "export-opml")
	email := fs.String("email", "", "the person's email address")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	s, u, err := a.existingUser(ctx, *email)
	if err != nil {
		return err
	}
	return web.ExportOPML(ctx, s, u, a.stdout)
}

// progressLine returns a function that shows one updating line on stderr
// when it is a terminal (and does nothing otherwise); "" clears the line.
func (a *app) progressLine() func(string) {
	f, ok := a.stderr.(*os.File)
	if !ok || !(isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())) {
		return func(string) {}
	}
	return func(s string) {
		const width = 100
		if len(s) > width {
			s = s[:width-1] + "…"
		}
		fmt.Fprintf(f, "\r\033[K%s", s)
	}
}

func nonNil(r []web.ImportResult) []web.ImportResult {
	if r == nil {
		return []web.ImportResult{}
	}
	return r
}
