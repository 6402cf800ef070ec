package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/feedmail/feedmail/internal/article"
	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/preview"
	"github.com/feedmail/feedmail/internal/subscribe"
	"github.com/feedmail/feedmail/mailer"
)

const previewUsage = "--feed URL [--format F] [--digest SCHEDULE] [--tz ZONE] [--eml FILE]"

// previewOutput is what `feedmail preview` prints.
type previewOutput struct {
	FeedURL   string           `json:"feed_url"`
	FeedTitle string           `json:"feed_title"`
	Digest    bool             `json:"digest"`
	Subject   string           `json:"subject"`
	HTML      string           `json:"html"`
	Text      string           `json:"text"`
	Forecast  preview.Forecast `json:"forecast"`
	Note      string           `json:"note,omitempty"`
	// EML is the file the whole message was written to (--eml).
	EML string `json:"eml,omitempty"`
}

// cmdPreview prints the email the feed's newest post would make in a
// format (or, with --digest, a sample issue of that schedule) as JSON,
// and with --eml writes the whole message as a .eml file ("-": on
// stdout, instead of the JSON). It is the preview of the web pages
// without their rate limits: nothing is sent or stored. Bad choices are
// usage errors (exit 2); a feed that cannot be read fails (exit 1).
func cmdPreview(ctx context.Context, a *app, args []string) error {
	fs := flags(a, "preview")
	feed := fs.String("feed", "", "the feed's or site's address")
	format := fs.String("format", "full", "what the email shows: full, summary, title or article")
	sched := fs.String("digest", "", "a digest schedule (daily, weekly, a cron spec, @every 1h): a sample issue instead of one post")
	zone := fs.String("tz", "UTC", "the reader's time zone (IANA), in which posts are dated and the digest scheduled")
	eml := fs.String("eml", "", "also write the whole message to this .eml file (- for standard output instead of the JSON)")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if strings.TrimSpace(*feed) == "" {
		return fmt.Errorf("%w: --feed is required", errUsage)
	}
	s, err := a.openStore(ctx)
	if err != nil {
		return err
	}
	subs := &subscribe.Service{Store: s, Links: a.links(), Clock: a.clock, Fetch: fetcher.New(a.fetchConfig()), Log: a.log}
	svc := preview.New(preview.Config{Subs: subs, Sender: a.sender(), Links: a.links(),
		Articles: article.NewReader(a.fetchConfig(), a.clock)})
	delivery := preview.Instant
	if strings.TrimSpace(*sched) != "" {
		delivery = *sched
	}
	res, err := svc.Preview(ctx, preview.Request{Feed: *feed, Format: *format, Delivery: delivery, Zone: *zone})
	var p *preview.Problem
	if errors.As(err, &p) {
		if p.Field == "feed" {
			return fmt.Errorf("%s: %s", *feed, cmp.Or(p.Detail, p.Msg))
		}
		flag := map[string]string{"delivery": "--digest", "zone": "--tz"}[p.Field]
		if flag == "" {
			flag = "--" + p.Field
		}
		return fmt.Errorf("%w: %s: %s", errUsage, flag, p.Msg)
	}
	if err != nil {
		return err
	}
	out := previewOutput{FeedURL: res.FeedURL, FeedTitle: res.FeedTitle, Digest: res.Digest, Subject: res.Subject,
		HTML: res.HTML, Text: res.Text, Forecast: res.Forecast, Note: res.Note}
	if *eml != "" {
		raw, err := mailer.Render(res.Message)
		if err != nil {
			return err
		}
		if *eml == "-" {
			_, err := a.stdout.Write(raw)
			return err
		}
		if err := os.WriteFile(*eml, raw, 0o644); err != nil {
			return fmt.Errorf("write the message: %w", err)
		}
		out.EML = *eml
	}
	return a.printJSON(out)
}
