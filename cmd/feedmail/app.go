package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/config"
	"github.com/feedmail/feedmail/internal/dbwait"
	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/metrics"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/token"
	"github.com/feedmail/feedmail/mailer"
)

// app is what every subcommand shares: configuration, logger, and the store
// (opened on first use, so `help` and bad flags never touch the database).
type app struct {
	cfg     config.Config
	log     *slog.Logger
	clock   clock.Clock
	stdin   io.Reader
	stdout  io.Writer
	stderr  io.Writer
	environ []string
	store   *store.Store
	metrics *metrics.Metrics
	// dbWait follows the serve roles' view of the database (set by serve;
	// nil elsewhere, where loops log their own errors).
	dbWait *dbwait.Process
	tokens *token.Signer
	// installID is this database's own id (settings "install_id"),
	// generated on first run; see sender.
	installID string
	// dkim signs outgoing mail (nil: DKIM off); see loadDKIM.
	dkim *mailer.DKIMSigner
	// inboundTLS checks the inbound mailbox's certificate (nil: the
	// system's roots; tests set their own).
	inboundTLS *tls.Config
	// afterInbound, when set (tests), runs after each message the inbound
	// role handled, before it is moved.
	afterInbound func(raw []byte)
	// helpAsked: the command line asks for -h (flag lists are printed
	// only then).
	helpAsked bool
}

// newApp loads the configuration from environ ("NAME=value" entries) and
// logs, once, what in it looks wrong but does not stop feedmail
// (config.Warnings).
func newApp(environ []string, stdout, stderr io.Writer) (*app, error) {
	getenv := (&app{environ: environ}).getenv
	cfg, err := config.Load(getenv)
	if err != nil {
		return nil, err
	}
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	for _, w := range config.Warnings(cfg, environ) {
		log.Warn(w)
	}
	return &app{cfg: cfg, log: log, clock: clock.Real{}, stdout: stdout, stderr: stderr, environ: environ,
		stdin: strings.NewReader(""), metrics: metrics.New()}, nil
}

// openExistingStore is openStore for commands that only look things up: a
// SQLite file that does not exist is an error, not a new empty database
// made wherever the command was run.
func (a *app) openExistingStore(ctx context.Context) (*store.Store, error) {
	if path, missing := store.MissingSQLiteFile(a.cfg.DatabaseURL); missing && a.store == nil {
		return nil, fmt.Errorf("no database at %s: run the command where feedmail keeps it, or set FEEDMAIL_DATABASE_URL", path)
	}
	return a.openStore(ctx)
}

// openStore opens and migrates the database, and loads (or generates once) the
// HMAC secret for link tokens.
func (a *app) openStore(ctx context.Context) (*store.Store, error) {
	if a.store != nil {
		return a.store, nil
	}
	s, err := store.Open(ctx, a.cfg.DatabaseURL, store.Options{Clock: a.clock, Logger: a.log,
		OnStatement: a.metrics.CountStatement, OnConnect: a.metrics.CountConnect, OnTakeover: a.onTakeover})
	if err != nil {
		return nil, err
	}
	if _, err := s.Migrate(ctx); err != nil {
		s.Close()
		return nil, err
	}
	secret := a.cfg.Secret
	if secret == "" {
		var b [32]byte
		if _, err := rand.Read(b[:]); err != nil {
			s.Close()
			return nil, fmt.Errorf("generate secret: %w", err)
		}
		if secret, err = s.SettingOrInit(ctx, "secret", hex.EncodeToString(b[:])); err != nil {
			s.Close()
			return nil, err
		}
	}
	if a.tokens, err = token.NewSigner([]byte(secret)); err != nil {
		s.Close()
		return nil, fmt.Errorf("FEEDMAIL_SECRET: %w", err)
	}
	// The install's own id: installs that share FEEDMAIL_SECRET (copied
	// configuration) still differ by their database.
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		s.Close()
		return nil, fmt.Errorf("generate install id: %w", err)
	}
	if a.installID, err = s.SettingOrInit(ctx, "install_id", hex.EncodeToString(id[:])); err != nil {
		s.Close()
		return nil, err
	}
	if sqlDB, err := s.DB.DB(); err == nil {
		a.metrics.WatchPool(sqlDB)
	}
	a.store = s
	return s, nil
}

// loadDKIM reads the DKIM key when FEEDMAIL_DKIM_* are set, once: a key
// file that is missing, unreadable or unfit is an error naming the
// variable, so `serve` stops at start rather than send unsigned mail.
func (a *app) loadDKIM() error {
	if a.dkim != nil || !a.cfg.DKIMEnabled() {
		return nil
	}
	d, err := mailer.LoadDKIMSigner(a.cfg.DKIMDomain, a.cfg.DKIMSelector, a.cfg.DKIMKeyFile)
	if err != nil {
		return fmt.Errorf("FEEDMAIL_DKIM_PRIVATE_KEY_FILE: %w", err)
	}
	a.dkim = d
	return nil
}

func (a *app) close() {
	if a.store != nil {
		_ = a.store.Close()
	}
}

// printJSON writes v as indented JSON on stdout.
func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printJSONLine writes v as one line of JSON on stdout.
func (a *app) printJSONLine(v any) error {
	return json.NewEncoder(a.stdout).Encode(v)
}

// getenv reads a variable of the environment the command was given (the
// last one wins, as in a shell).
func (a *app) getenv(name string) string {
	v := ""
	for _, kv := range a.environ {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val
		}
	}
	return v
}

// hostname for lease owners.
func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "feedmail"
	}
	return strings.ReplaceAll(h, " ", "-")
}

// links makes the URLs and addresses that go into email and pages.
func (a *app) links() links.Links {
	return links.New(a.cfg.BaseURL, a.tokens, a.cfg.From).WithBounce(a.cfg.BounceAddress)
}
