package main

import (
	"context"
	"fmt"
	"os"

	"github.com/feedmail/feedmail/digest"
	"github.com/feedmail/feedmail/internal/web"
	"github.com/feedmail/feedmail/mailer"
)

// roleDigest runs the digest worker: at each digest's slot it assembles the
// items queued since the last issue into one outbox email (the mailer role
// sends it, with digestRenderer).
func roleDigest(a *app, _ *web.Server) (func(ctx context.Context) error, error) {
	s, err := a.openStore(context.Background())
	if err != nil {
		return nil, err
	}
	w, err := digest.NewWorker(digest.Config{
		Store: s, Owner: fmt.Sprintf("%s-%d-digest", hostname(), os.Getpid()),
		Clock: a.clock, Log: a.log.With("role", "digest"), Metrics: a.metrics,
	})
	if err != nil {
		return nil, err
	}
	return w.Run, nil
}

// digestRenderer composes outbox rows of kind "digest" for the mailer role.
func digestRenderer(e renderEnv) mailer.Renderer {
	return digest.NewRenderer(digest.RenderConfig{Store: e.Store, Sender: e.Sender, Links: e.Links, Clock: e.App.clock})
}
