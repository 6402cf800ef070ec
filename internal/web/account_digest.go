package web

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/feedmail/feedmail/digest"
	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/store"
)

// accountDigest is POST /account/{token}/digests: create (no id) or change
// (id) a digest. Errors re-render the page with the form as typed.
func (s *Server) accountDigest(w http.ResponseWriter, r *http.Request) {
	u, tok, ok := s.accountUser(w, r)
	if !ok || !s.parseForm(w, r) {
		return
	}
	f, ok := readDigestForm(r)
	if !ok {
		s.notFound(w, r)
		return
	}
	sched := checkDigestForm(&f)
	if len(f.Errors) == 0 {
		_, err := s.Store.SaveAccountDigest(r.Context(), u.ID, f.ID, f.Name, sched)
		switch {
		case errors.Is(err, store.ErrDigestNameTaken):
			f.Errors["name"] = "you already have a digest with this name"
		case errors.Is(err, store.ErrNotFound):
			s.notFound(w, r)
			return
		case err != nil:
			s.serverError(w, r, err)
			return
		default:
			backToAccount(w, r, tok, "digest", "digests")
			return
		}
	}
	s.digestFormAgain(w, r, u, tok, f)
}

// accountDigestDelete is POST /account/{token}/digests/{id}/delete: the
// digest goes, and its feeds go to instant delivery or end, as the form's
// "feeds" says (store.DigestFeeds*).
func (s *Server) accountDigestDelete(w http.ResponseWriter, r *http.Request) {
	u, tok, ok := s.accountUser(w, r)
	if !ok || !s.parseForm(w, r) {
		return
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		s.notFound(w, r)
		return
	}
	feeds := r.PostForm.Get("feeds")
	if feeds != store.DigestFeedsInstant && feeds != store.DigestFeedsUnsubscribe {
		s.renderMessage(w, r, http.StatusUnprocessableEntity, "Say what becomes of its feeds",
			"Pick whether the digest's feeds come one post per email from now on, or stop.",
			pageLink{"Back to your account", links.Fill(links.PathAccount, tok) + "#digests"})
		return
	}
	switch _, err := s.Store.DeleteDigest(r.Context(), u.ID, id, feeds); {
	case errors.Is(err, store.ErrNotFound):
		s.notFound(w, r)
	case err != nil:
		s.serverError(w, r, err)
	default:
		backToAccount(w, r, tok, "digestgone", "digests")
	}
}

// readDigestForm reads the posted digest form, clipped; ok is false when
// the id is not a number.
func readDigestForm(r *http.Request) (digestForm, bool) {
	f := digestForm{
		Name:   clip(strings.TrimSpace(r.PostForm.Get("name")), 200),
		Preset: clip(r.PostForm.Get("preset"), 40),
		Spec:   clip(strings.TrimSpace(r.PostForm.Get("spec")), 200),
		Zone:   clip(strings.TrimSpace(r.PostForm.Get("zone")), 64),
		Errors: map[string]string{},
	}
	if v := r.PostForm.Get("id"); v != "" {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return f, false
		}
		f.ID = id
	}
	return f, true
}

// checkDigestForm notes each problem of f in f.Errors and returns the
// schedule when there is none.
func checkDigestForm(f *digestForm) *digest.Schedule {
	spec := f.Spec
	if f.Preset != customSchedule {
		found := false
		for _, p := range digest.Presets() {
			if p.Key == f.Preset {
				spec, found = p.Spec, true
			}
		}
		if !found {
			f.Errors["preset"] = "pick a schedule"
		}
	}
	if !validZone(f.Zone) {
		f.Errors["zone"] = "pick a time zone from the list"
	}
	if _, err := store.CleanDigestName(f.Name); err != nil {
		f.Errors["name"] = "give the digest a name (up to 60 characters)"
	}
	if len(f.Errors) > 0 {
		return nil
	}
	sched, err := digest.ParseSchedule(spec, f.Zone)
	if err != nil {
		f.Errors["spec"] = digest.ScheduleProblem(err)
	}
	return sched
}

// digestFormAgain shows the account page (422) with f as typed in place
// of its form.
func (s *Server) digestFormAgain(w http.ResponseWriter, r *http.Request, u *store.User, tok string, f digestForm) {
	d, err := s.accountView(r.Context(), u, tok)
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	f.Zones = zoneOptions(f.Zone)
	if f.ID == 0 {
		d.New = f
	} else {
		for i := range d.Digests {
			if d.Digests[i].ID == f.ID {
				f.Next, f.Feeds, f.Schedule = d.Digests[i].Next, d.Digests[i].Feeds, d.Digests[i].Schedule
				f.NextLocal, f.Forecast, f.ChannelForm = d.Digests[i].NextLocal, d.Digests[i].Forecast, d.Digests[i].ChannelForm
				d.Digests[i] = f
			}
		}
	}
	s.render(w, r, http.StatusUnprocessableEntity, "account", "Your feedmail", d)
}
