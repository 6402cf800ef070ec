package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/feedmail/feedmail/digest"
	"github.com/feedmail/feedmail/internal/channel/webhook"
	"github.com/feedmail/feedmail/internal/store"
)

// digestSubs returns the digest subcommands, in the order help lists them.
func digestSubs() []subcommand {
	return []subcommand{
		{"set", "--email E --name NAME --schedule SPEC [--tz ZONE] [--channel NAME --target URL [--token T]]", "create a digest (and the account, if missing) or change its schedule; prints its next slot", cmdDigestSet},
		{"list", "--email E", "JSON: an account's digests with their next slots and pending items", cmdDigestList},
		{"delete", "--email E --name NAME [--feeds instant|unsubscribe]", "delete a digest; one that still delivers feeds needs --feeds", cmdDigestDelete},
	}
}

// cmdDigest dispatches `feedmail digest set|list|delete`.
func cmdDigest(ctx context.Context, a *app, args []string) error {
	return dispatch(ctx, a, "digest", args)
}

// digestJSON is a digest as the commands print it.
type digestJSON struct {
	ID            int64      `json:"id"`
	Email         string     `json:"email"`
	Name          string     `json:"name"`
	Schedule      string     `json:"schedule"`
	Timezone      string     `json:"timezone"`
	NextSlotAt    time.Time  `json:"next_slot_at"`
	NextSlotLocal string     `json:"next_slot_local"` // the next slot on the person's clock
	LastSlotAt    *time.Time `json:"last_slot_at,omitempty"`
	Pending       int64      `json:"pending_items"`
	Channel       string     `json:"channel"`
	Target        string     `json:"target,omitempty"`
	// SigningSecret is a webhook's, printed when the channel is set.
	SigningSecret string `json:"signing_secret,omitempty"`
}

func toDigestJSON(ctx context.Context, s *store.Store, email string, d *store.Digest) (digestJSON, error) {
	out := digestJSON{ID: d.ID, Email: email, Name: d.Name, Schedule: d.Schedule, Timezone: d.Timezone,
		NextSlotAt: d.NextSlotAt.UTC(), NextSlotLocal: d.NextSlotAt.UTC().Format(time.RFC3339),
		Channel: orEmail(d.Channel), Target: d.Target}
	if loc, err := time.LoadLocation(d.Timezone); err == nil {
		out.NextSlotLocal = d.NextSlotAt.In(loc).Format(time.RFC3339)
	}
	if d.LastSlotAt != nil {
		t := d.LastSlotAt.UTC()
		out.LastSlotAt = &t
	}
	n, err := s.PendingDigestItems(ctx, d.ID)
	out.Pending = n
	return out, err
}

// cmdDigestSet creates a digest (and the account, when missing) or changes
// its schedule, and prints it with its next slot. Without --tz a new
// digest takes the account's time zone and an existing one keeps its own.
func cmdDigestSet(ctx context.Context, a *app, args []string) error {
	fs := flags(a, "digest set")
	email := fs.String("email", "", "the person's email address (the account is created if missing)")
	name := fs.String("name", "", `the digest's name, e.g. "Morning" (an existing digest of that name is changed)`)
	spec := fs.String("schedule", "", `cron spec ("0 7 * * *"), descriptor ("@daily", "@every 1h") or preset ("daily", "weekly", "twice-daily")`)
	zone := fs.String("tz", "", `IANA time zone, e.g. "Europe/Berlin" (default: the digest's or the account's)`)
	chanOf := channelFlags(fs, a.cfg.AllowPrivateNetworks)
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	choice, err := chanOf()
	if err != nil {
		return err
	}
	addr, err := emailFlag(*email)
	if err != nil {
		return err
	}
	cleanName, err := store.CleanDigestName(*name)
	if err != nil {
		return fmt.Errorf("%w: --name: %v", errUsage, err)
	}
	if strings.TrimSpace(*spec) == "" {
		return fmt.Errorf("%w: --schedule is required", errUsage)
	}
	// Check the spec and zone before touching the database, so bad input
	// creates no account.
	if _, err := digest.ParseSchedule(*spec, *zone); err != nil {
		return digestInputError(*spec, err)
	}
	u, err := a.ensureUser(ctx, addr)
	if err != nil {
		return err
	}
	s := a.store
	tz := strings.TrimSpace(*zone)
	if tz == "" {
		tz = u.Timezone
		if old, err := s.DigestByName(ctx, u.ID, cleanName); err == nil {
			tz = old.Timezone
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	d, _, err := digest.Set(ctx, s, u.ID, cleanName, *spec, tz)
	if err != nil {
		return digestInputError(*spec, err)
	}
	if err := setDigestChannel(ctx, s, d, choice); err != nil {
		return err
	}
	out, err := toDigestJSON(ctx, s, u.Email, d)
	if err != nil {
		return err
	}
	if choice.Channel == webhook.Name {
		out.SigningSecret = d.ChannelSecret
	}
	a.log.Info("digest set", "email", u.Email, "digest", d.Name, "schedule", d.Schedule, "zone", d.Timezone, "next", d.NextSlotAt)
	return a.printJSON(out)
}

// digestInputError turns a bad spec or zone into a usage error naming the
// flag; a bad spec says what is wrong as the web form does
// (digest.ScheduleProblem: the forms it accepts).
func digestInputError(spec string, err error) error {
	switch {
	case errors.Is(err, digest.ErrBadSpec):
		return fmt.Errorf("%w: --schedule %q: %s", errUsage, strings.TrimSpace(spec), digest.ScheduleProblem(err))
	case errors.Is(err, digest.ErrBadZone):
		return fmt.Errorf("%w: --tz: %v", errUsage, err)
	case errors.Is(err, store.ErrBadDigestName):
		return fmt.Errorf("%w: --name: %v", errUsage, err)
	}
	return err
}

// cmdDigestDelete deletes a digest of an existing account. A digest that
// still delivers feeds needs --feeds: instant (each post in its own email
// from now on) or unsubscribe.
func cmdDigestDelete(ctx context.Context, a *app, args []string) error {
	fs := flags(a, "digest delete")
	email := fs.String("email", "", "the person's email address")
	name := fs.String("name", "", "the digest's name")
	feeds := fs.String("feeds", "", "what becomes of its feeds: instant or unsubscribe")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if *feeds != "" && *feeds != store.DigestFeedsInstant && *feeds != store.DigestFeedsUnsubscribe {
		return fmt.Errorf("%w: --feeds is instant or unsubscribe, not %q", errUsage, *feeds)
	}
	s, u, err := a.existingUser(ctx, *email)
	if err != nil {
		return err
	}
	dg, err := a.digestNamed(ctx, u, strings.TrimSpace(*name))
	if err != nil {
		return err
	}
	n, err := s.DeleteDigest(ctx, u.ID, dg.ID, *feeds)
	if errors.Is(err, store.ErrDigestHasFeeds) {
		return fmt.Errorf("%w: digest %q delivers feeds: say --feeds instant (each post in its own email) or --feeds unsubscribe",
			errUsage, dg.Name)
	}
	if err != nil {
		return err
	}
	return a.printJSON(map[string]any{"email": u.Email, "deleted": dg.Name, "feeds": n, "feeds_now": *feeds})
}

// cmdDigestList prints an account's digests.
func cmdDigestList(ctx context.Context, a *app, args []string) error {
	s, u, err := a.personOnly(ctx, "digest list", args)
	if err != nil {
		return err
	}
	ds, err := s.DigestsOfUser(ctx, u.ID)
	if err != nil {
		return err
	}
	out := make([]digestJSON, 0, len(ds))
	for i := range ds {
		j, err := toDigestJSON(ctx, s, u.Email, &ds[i])
		if err != nil {
			return err
		}
		out = append(out, j)
	}
	return a.printJSON(map[string]any{"email": u.Email, "digests": out})
}
