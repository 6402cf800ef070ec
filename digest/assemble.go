package digest

import (
	"context"
	"fmt"
	"time"

	"github.com/feedmail/feedmail/internal/store"
)

// Set creates the digest name of userID with the schedule spec in zone, or
// changes the schedule of the one they have. A bad spec wraps ErrBadSpec, an
// unknown zone ErrBadZone, a bad name store.ErrBadDigestName. The returned
// digest's NextSlotAt is the first slot after the store clock's now.
func Set(ctx context.Context, st *store.Store, userID int64, name, spec, zone string) (*store.Digest, *Schedule, error) {
	sched, err := ParseSchedule(spec, zone)
	if err != nil {
		return nil, nil, err
	}
	d, err := st.SetDigest(ctx, userID, name, sched)
	if err != nil {
		return nil, nil, err
	}
	return d, sched, nil
}

// PlanSlot decides what a claimed digest's due slot is at now: the newest
// slot at or after its stored next slot and at or before now — so however
// many slots passed while nothing ran, they collapse into one issue — and
// the slot after that. When no slot lies in that window (the schedule was
// changed while the digest was claimed) the plan has a zero Slot and only
// moves the next slot.
func PlanSlot(d store.Digest, sched *Schedule, now time.Time) store.SlotPlan {
	p := store.SlotPlan{DigestID: d.ID, Next: sched.Next(now)}
	if slot, ok := sched.Latest(d.NextSlotAt.Add(-time.Nanosecond), now); ok {
		p.Slot = slot
	}
	return p
}

// planner parses each (spec, zone) once per batch.
type planner struct {
	cache map[[2]string]*Schedule
}

// plan returns the plan for d, or an error when its stored schedule no
// longer parses (a zone removed from the database, say).
func (p *planner) plan(d store.Digest, now time.Time) (store.SlotPlan, error) {
	if p.cache == nil {
		p.cache = map[[2]string]*Schedule{}
	}
	key := [2]string{d.Schedule, d.Timezone}
	sched, ok := p.cache[key]
	if !ok {
		var err error
		if sched, err = ParseSchedule(d.Schedule, d.Timezone); err != nil {
			return store.SlotPlan{}, fmt.Errorf("digest %d: stored schedule: %w", d.ID, err)
		}
		p.cache[key] = sched
	}
	return PlanSlot(d, sched, now), nil
}
