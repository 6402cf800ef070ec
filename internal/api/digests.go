package api

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/feedmail/feedmail/digest"
	"github.com/feedmail/feedmail/internal/channel/webhook"
	"github.com/feedmail/feedmail/internal/model"
	"github.com/feedmail/feedmail/internal/store"
)

// digestJSON is a digest as the API shows it: with the channel and
// target its issues go to, never a token; a webhook's signing secret only
// in the answer that chose it.
type digestJSON struct {
	ID            int64      `json:"id"`
	Name          string     `json:"name"`
	Schedule      string     `json:"schedule"`
	Timezone      string     `json:"timezone"`
	NextSlotAt    time.Time  `json:"next_slot_at"`
	LastSlotAt    *time.Time `json:"last_slot_at"`
	CreatedAt     time.Time  `json:"created_at"`
	Channel       string     `json:"channel"`
	Target        string     `json:"target,omitempty"`
	SigningSecret string     `json:"signing_secret,omitempty"`
}

func toDigest(d store.Digest) digestJSON {
	out := digestJSON{ID: d.ID, Name: d.Name, Schedule: d.Schedule, Timezone: d.Timezone, NextSlotAt: d.NextSlotAt.UTC(),
		LastSlotAt: utcOrNil(d.LastSlotAt), CreatedAt: d.CreatedAt.UTC(), Channel: d.Channel, Target: d.Target}
	if out.Channel == "" {
		out.Channel = model.ChannelEmail
	}
	return out
}

// listDigests is GET /api/v1/digests: every digest of the account, by
// name (a person has few; one page, next_cursor always null).
func (s *Server) listDigests(w http.ResponseWriter, r *http.Request, u *store.User) {
	ds, err := s.Store.DigestsOfUser(r.Context(), u.ID)
	if err != nil {
		s.fail(w, r, "", err)
		return
	}
	out := page[digestJSON]{Items: make([]digestJSON, 0, len(ds))}
	for _, d := range ds {
		out.Items = append(out.Items, toDigest(d))
	}
	writeJSON(w, http.StatusOK, out)
}

// getDigest is GET /api/v1/digests/{id}.
func (s *Server) getDigest(w http.ResponseWriter, r *http.Request, u *store.User) {
	id, ok := pathID(w, r, "digest")
	if !ok {
		return
	}
	d, err := s.Store.AccountDigest(r.Context(), u.ID, id)
	if isNotFound(err) {
		writeProblem(w, notFound("digest", id))
		return
	}
	if err != nil {
		s.fail(w, r, "", err)
		return
	}
	writeJSON(w, http.StatusOK, toDigest(*d))
}

// digestRequest is the body of POST and PATCH /api/v1/digests[/{id}]:
// where its issues go as for a subscription (channelRequest).
type digestRequest struct {
	Name     *string `json:"name"`
	Schedule *string `json:"schedule"` // cron spec, descriptor or preset (package digest)
	Timezone *string `json:"timezone"` // IANA zone
	channelRequest
}

// chosenChannel is req's channel checked as a subscription's is; nil when
// req names none.
func (req digestRequest) chosenChannel(allowPrivate bool) (*model.ChannelChoice, *problem) {
	ch, set, p, bad := req.choice(allowPrivate)
	switch {
	case bad:
		return nil, &p
	case !set:
		return nil, nil
	}
	return &ch, nil
}

// scheduled says req changes the name, schedule or zone.
func (req digestRequest) scheduled() bool {
	return req.Name != nil || req.Schedule != nil || req.Timezone != nil
}

// createDigest is POST /api/v1/digests: a new digest (name and schedule
// required; the zone defaults to the account's). 201.
func (s *Server) createDigest(w http.ResponseWriter, r *http.Request, u *store.User) {
	var req digestRequest
	if !readJSON(w, r, &req) {
		return
	}
	switch {
	case req.Name == nil:
		writeProblem(w, invalid("name", "name is required"))
		return
	case req.Schedule == nil:
		writeProblem(w, invalid("schedule", "schedule is required"))
		return
	}
	ch, p := req.chosenChannel(s.AllowPrivate)
	if p != nil {
		writeProblem(w, *p)
		return
	}
	s.saveDigest(w, r, u, 0, req, store.Digest{Timezone: u.Timezone}, ch)
}

// patchDigest is PATCH /api/v1/digests/{id}: its name, schedule or zone
// (the next slot follows the new schedule), or its channel. Everything is
// checked before anything changes.
func (s *Server) patchDigest(w http.ResponseWriter, r *http.Request, u *store.User) {
	id, ok := pathID(w, r, "digest")
	if !ok {
		return
	}
	var req digestRequest
	if !readJSON(w, r, &req) {
		return
	}
	if _, bad := digestSchedule(req, store.Digest{Name: "x", Schedule: "daily", Timezone: "UTC"}); bad != nil {
		writeProblem(w, *bad)
		return
	}
	ch, p := req.chosenChannel(s.AllowPrivate)
	if p != nil {
		writeProblem(w, *p)
		return
	}
	old, err := s.Store.AccountDigest(r.Context(), u.ID, id)
	if isNotFound(err) {
		writeProblem(w, notFound("digest", id))
		return
	}
	if err != nil {
		s.fail(w, r, "", err)
		return
	}
	if ch != nil {
		req.keepSecret(ch, old.Channel, old.Target, old.ChannelSecret)
	}
	s.saveDigest(w, r, u, id, req, *old, ch)
}

// saveDigest checks req over old's values and saves digest id (0: new)
// with its channel ch (nil: as it is), in one transaction. A digest whose
// name, schedule and zone stay keeps its next slot. The answer shows a
// webhook's signing secret when ch chose a new one.
func (s *Server) saveDigest(w http.ResponseWriter, r *http.Request, u *store.User, id int64, req digestRequest, old store.Digest,
	ch *model.ChannelChoice) {
	freshSecret := ch != nil && ch.Channel == webhook.Name && ch.Secret != old.ChannelSecret
	sched, bad := digestSchedule(req, old)
	if bad != nil {
		writeProblem(w, *bad)
		return
	}
	name := old.Name
	if req.Name != nil {
		name = *req.Name
	}
	d := &old
	err := s.Store.Tx(r.Context(), func(tx *store.Store) error {
		var err error
		if id == 0 || req.scheduled() {
			if d, err = tx.SaveAccountDigest(r.Context(), u.ID, id, name, sched); err != nil {
				return err
			}
		}
		if ch == nil {
			return nil
		}
		d.Channel, d.Target, d.ChannelSecret = ch.Channel, ch.Target, ch.Secret
		return tx.SetDigestChannel(r.Context(), u.ID, d.ID, *ch)
	})
	if err != nil {
		s.fail(w, r, "name", err)
		return
	}
	status := http.StatusOK
	if id == 0 {
		status = http.StatusCreated
		w.Header().Set("Location", Prefix+"digests/"+strconv.FormatInt(d.ID, 10))
	}
	out := toDigest(*d)
	if freshSecret {
		out.SigningSecret = ch.Secret
	}
	writeJSON(w, status, out)
}

// digestSchedule checks req's members over old's values and returns the
// schedule, or the problem.
func digestSchedule(req digestRequest, old store.Digest) (*digest.Schedule, *problem) {
	if req.Name != nil {
		if _, err := store.CleanDigestName(*req.Name); err != nil {
			p := invalid("name", err.Error())
			return nil, &p
		}
	}
	spec, zone := old.Schedule, old.Timezone
	if req.Schedule != nil {
		spec = strings.TrimSpace(*req.Schedule)
	}
	if req.Timezone != nil {
		zone = strings.TrimSpace(*req.Timezone)
	}
	sched, err := digest.ParseSchedule(spec, zone)
	switch {
	case err == nil:
		return sched, nil
	case req.Schedule != nil && !isZoneError(err):
		p := invalid("schedule", digest.ScheduleProblem(err))
		return nil, &p
	}
	p := invalid("timezone", err.Error())
	return nil, &p
}

func isZoneError(err error) bool { return errors.Is(err, digest.ErrBadZone) }
