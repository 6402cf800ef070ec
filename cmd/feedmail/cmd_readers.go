package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/feedmail/feedmail/internal/api"
	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/subscribe"
)

const importReadersUsage = "[--confirmed] [--problems FILE] [--batch N] FOLDER...   (one OPML file per person, named ADDRESS.opml)"

// readersShown is how many problems the report lists when they do not go
// to a --problems file.
const readersShown = 100

// readersJSON is what import-readers prints.
type readersJSON struct {
	Confirmed bool `json:"confirmed"`
	subscribe.ReadersSummary
	ByKind map[string]int `json:"problems_by_kind"`
	// Shown lists the first problems (all of them go to --problems).
	Shown        []subscribe.ReaderProblem `json:"problems_shown"`
	ProblemsFile string                    `json:"problems_file,omitempty"`
	Seconds      float64                   `json:"seconds"`
}

// cmdImportReaders imports many people at once from folders of OPML files,
// one per person named by their address: accounts created when missing,
// feeds feedmail knows linked and new ones left to their first poll (no
// fetch now), a transaction per few hundred people. With --confirmed the
// subscriptions are active at once and nobody is emailed; without it
// each person gets one email asking to confirm. Entries it cannot take
// (bad or dead addresses, duplicates, malformed lists or URLs) are
// reported, not fatal: every one as a JSON line in --problems, the first
// ones in the JSON report, and the command then exits exPartial (3).
func cmdImportReaders(ctx context.Context, a *app, args []string) error {
	fs := flags(a, "import-readers")
	confirmed := fs.Bool("confirmed", false, "make the subscriptions active now and send nobody a confirmation email (the operator vouches for the addresses)")
	problemsPath := fs.String("problems", "", "write every problem as a JSON line to this file")
	batch := fs.Int("batch", subscribe.DefaultReadersBatch, "people written per transaction")
	dirs, err := parseInterspersed(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if len(dirs) == 0 || *batch < 1 {
		return fmt.Errorf("%w: give at least one folder of OPML files and a --batch of at least 1", errUsage)
	}
	svc, err := a.subscribeService(ctx)
	if err != nil {
		return err
	}
	out := readersJSON{Confirmed: *confirmed, ByKind: map[string]int{}, Shown: []subscribe.ReaderProblem{}}
	var sink *json.Encoder
	if *problemsPath != "" {
		f, err := os.Create(*problemsPath)
		if err != nil {
			return fmt.Errorf("problems file: %w", err)
		}
		defer f.Close()
		sink, out.ProblemsFile = json.NewEncoder(f), *problemsPath
	}
	var sinkErr error
	opt := subscribe.ReadersOptions{Confirmed: *confirmed, Batch: *batch, Problem: func(p subscribe.ReaderProblem) {
		out.ByKind[p.Kind]++
		if len(out.Shown) < readersShown {
			out.Shown = append(out.Shown, p)
		}
		if sink != nil && sinkErr == nil {
			sinkErr = sink.Encode(p)
		}
	}}
	start := a.clock.Now()
	if show := a.progressLine(); show != nil {
		opt.Progress = readersProgress(show, a.clock, start)
		defer show("")
	}
	sum, err := svc.ImportReaders(ctx, subscribe.ReadersFromFolders(dirs), opt)
	out.ReadersSummary, out.Seconds = sum, a.clock.Now().Sub(start).Seconds()
	if perr := a.printJSON(out); err == nil {
		err = perr
	}
	if err == nil && sinkErr != nil {
		err = fmt.Errorf("problems file: %w", sinkErr)
	}
	if err != nil {
		return err
	}
	if sum.Problems > 0 {
		return fmt.Errorf("%w: %d problems (%d of %d lists not imported, %d feed entries not imported; the report says which)",
			errPartial, sum.Problems, sum.SkippedLists, sum.Lists, sum.Failed)
	}
	return nil
}

// readersProgress returns the import's Progress callback: one line with
// the counts and the rate, redrawn at most every progressEvery.
func readersProgress(show func(string), clk clock.Clock, start time.Time) func(subscribe.ReadersSummary) {
	var drawn time.Time
	return func(s subscribe.ReadersSummary) {
		now := clk.Now()
		if now.Sub(drawn) < progressEvery {
			return
		}
		drawn = now
		line := fmt.Sprintf("import-readers: %d lists: %d people (%d new), %d subscriptions added, %d problems",
			s.Lists, s.Readers, s.Created, s.Added, s.Problems)
		if secs := now.Sub(start).Seconds(); secs >= 1 {
			line += fmt.Sprintf(", %.0f subscriptions/s", float64(s.Added)/secs)
		}
		show(line)
	}
}

// operatorTokenJSON is what `feedmail operator token` prints.
type operatorTokenJSON struct {
	Token   string `json:"token"`
	SHA256  string `json:"sha256"`
	Setting string `json:"setting"`
}

// cmdOperatorToken makes a new operator token for the API's operator
// routes (the bulk import) and prints it with the setting that makes
// serve take it: feedmail keeps only its hash, in its configuration, so
// nothing is written and the database is not opened.
func cmdOperatorToken(_ context.Context, a *app, args []string) error {
	if err := parseNoArgs(flags(a, "operator token"), args); err != nil {
		return err
	}
	plain, sum, err := api.NewOperatorToken()
	if err != nil {
		return err
	}
	return a.printJSON(operatorTokenJSON{Token: plain, SHA256: sum, Setting: "FEEDMAIL_OPERATOR_TOKEN_SHA256=" + sum})
}
