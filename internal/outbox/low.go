package outbox

import (
	"context"

	"github.com/feedmail/feedmail/internal/notices"
	"github.com/feedmail/feedmail/internal/store"
)

// warnLow queues the running-low notice of the people this batch charged
// who fell below their line (store.WarnRunningLow: one read by id, the
// forecast is not run here). A failure is logged, not returned: the email
// is paid and goes out, and the periodic pass checks the line again.
func (o *Outbox) warnLow(ctx context.Context, jobs []*job) {
	seen := map[int64]bool{}
	var users []int64
	for _, j := range jobs {
		if j.outcome == store.Charged && !seen[j.row.UserID] {
			seen[j.row.UserID] = true
			users = append(users, j.row.UserID)
		}
	}
	n, err := o.cfg.Store.WarnRunningLow(ctx, users, notices.RunningLowNotice(o.cfg.Links, o.cfg.Clock, o.cfg.PaymentsOn))
	if err != nil {
		o.cfg.Log.Warn("running-low warning", "err", err)
	}
	if n > 0 {
		o.cfg.Log.Info("running-low warnings queued", "count", n)
	}
}
