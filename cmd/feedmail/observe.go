package main

import (
	"time"

	"github.com/feedmail/feedmail/internal/store"
)

// onTakeover logs and counts one claim that took over work from holders
// whose leases had run out (store.Options.OnTakeover): the holder names
// say which process died or stalled (host-pid-role) and which took over.
func (a *app) onTakeover(t store.Takeover) {
	a.log.Info("leases taken over", "kind", t.Kind, "count", t.Count, "from", t.From, "by", t.By,
		"expired_for", t.Expired.Round(time.Millisecond))
	a.metrics.CountTakeover(t.Kind, t.Count)
}
