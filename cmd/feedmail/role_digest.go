package main

import (
	"context"
	"fmt"
	"os"

	"github.com/feedmail/feedmail/digest"
	"github.com/feedmail/feedmail/internal/web"
)

// roleDigest runs the digest worker: at each digest's slot it assembles the
// items queued since the last issue into one outbox email (the mailer role
// renders and sends it).
func roleDigest(a *app, _ *web.Server) (func(ctx context.Context) error, error) {
	s, err := a.openStore(context.Background())
	if err != nil {
		return nil, err
	}
	holder := fmt.Sprintf("%s-%d-digest", hostname(), os.Getpid())
	w, err := digest.NewWorker(digest.Config{
		Store: s, Owner: holder,
		Clock: a.clock, Log: a.log.With("role", "digest"), Metrics: a.metrics, DBWait: a.dbWait,
	})
	if err != nil {
		return nil, err
	}
	a.log.Info("digest ready", "owner", holder)
	return w.Run, nil
}
