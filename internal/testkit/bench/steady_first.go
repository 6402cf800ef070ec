package bench

import (
	"context"
	"fmt"
	"time"
)

// The cold start of the steady scenario (no SteadyConfig.WarmStart): the
// feeds are left as an import leaves them, every one due at once and never
// polled, a little before serve starts, so that serve's own start (and
// anything it does with overdue feeds) is part of what is measured. The
// warm-up then follows serve's first round through the database.

// importLead is how long before serve starts the cold run's feeds came due:
// longer than the poller's grace for a slightly late feed, as after an
// import done before the service was started.
const importLead = 2 * time.Minute

// steadyLate is how late the oldest due feed may be for the run to count as
// in steady state: well under the cadence, above a pass's own delay.
const steadyLate = 30 * time.Second

// importDue makes every feed due importLead ago, never polled, as an import
// leaves them (store.CreateFeeds: due now, "new feed: first poll"). With a
// warm start it does nothing (the warm start polled them).
func (s *steady) importDue(ctx context.Context) error {
	if s.cfg.WarmStart {
		return nil
	}
	at := time.Now().UTC().Add(-importLead)
	err := s.st.DB.WithContext(ctx).Exec(`UPDATE feeds SET next_poll_at = ?, poll_reason = 'new feed: first poll'`, at).Error
	if err != nil {
		return fmt.Errorf("make the feeds due as an import does: %w", err)
	}
	return nil
}

// firstRound is what the warm-up learned of serve's first round.
type firstRound struct {
	ended    time.Time // every feed had been polled once (zero: not yet)
	steadyAt time.Time // after that, the oldest due feed was under steadyLate late (zero: not yet)
	unpolled int64     // feeds not polled yet at the last look
	late     time.Duration
	watched  bool // the warm-up looked at least once
}

// watchFirstRound looks at the database once: how many feeds serve has not
// polled yet and how late the oldest due one is, and records when the
// first round ended and when the run first looked steady after it.
func (s *steady) watchFirstRound(ctx context.Context, now time.Time) error {
	fr := &s.first
	fr.watched = true
	if fr.ended.IsZero() {
		if err := s.st.DB.WithContext(ctx).Raw(`SELECT count(*) FROM feeds WHERE last_polled_at IS NULL AND state = 'active'`).
			Scan(&fr.unpolled).Error; err != nil {
			return fmt.Errorf("count the feeds not polled yet: %w", err)
		}
		if fr.unpolled > 0 {
			return nil
		}
		fr.ended = now
	}
	if !fr.steadyAt.IsZero() {
		return nil
	}
	var oldest *time.Time
	if err := s.st.DB.WithContext(ctx).Raw(`SELECT min(next_poll_at) FROM feeds WHERE state = 'active' AND subscriber_count > 0`).
		Scan(&oldest).Error; err != nil {
		return fmt.Errorf("find the oldest due feed: %w", err)
	}
	fr.late = 0
	if oldest != nil {
		fr.late = max(now.Sub(*oldest), 0)
	}
	if fr.late < steadyLate {
		fr.steadyAt = now
	}
	return nil
}

// noteFirstRound puts the first round's figures into rep (a cold run with
// a warm-up only).
func (s *steady) noteFirstRound(rep *SteadyReport) {
	fr := s.first
	if s.cfg.WarmStart || !fr.watched {
		return // warm, or no warm-up: the window holds the first round
	}
	if fr.ended.IsZero() {
		rep.FirstRoundS, rep.FirstRoundRate, rep.SteadyAfterS = -1, -1, -1
		s.notes = append(s.notes, fmt.Sprintf("serve's first round had not ended by the window: %d feeds never polled", fr.unpolled))
		return
	}
	took := fr.ended.Sub(s.t0).Seconds()
	rep.FirstRoundS, rep.FirstRoundRate = took, float64(s.cfg.Feeds)/max(took, 1)
	rep.SteadyAfterS = -1
	if !fr.steadyAt.IsZero() {
		rep.SteadyAfterS = fr.steadyAt.Sub(s.t0).Seconds()
	} else {
		s.notes = append(s.notes, fmt.Sprintf("not steady when the window began: the oldest due feed was %s late", fr.late.Round(time.Second)))
	}
}
