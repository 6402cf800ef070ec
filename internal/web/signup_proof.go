package web

import (
	"crypto/rand"
	"errors"
	"net/http"

	"github.com/feedmail/feedmail/internal/proof"
	"github.com/feedmail/feedmail/internal/ratelimit"
)

// proofField is the key of the signup form's error about its proof of
// work (the form's own id, so the error links to it).
const proofField = "signup"

// proofFields is what the signup page carries of its proof of work: the
// signed challenge, how many zero bits the script must find, and the
// script's URL.
type proofFields struct {
	Challenge string
	Bits      int
	ScriptURL string
}

// issueProof returns a new challenge for a signup form, nil when the
// proof is off (or a challenge could not be made: the form then works as
// if it were off for this page, and the check says "send it again").
func (s *Server) issueProof() *proofFields {
	if s.proofKey == nil {
		return nil
	}
	ch, err := proof.Issue(s.proofKey, s.Clock.Now(), rand.Reader)
	if err != nil {
		s.Log.Error("signup proof", "err", err)
		return nil
	}
	return &proofFields{Challenge: ch, Bits: s.lim.Proof.Bits, ScriptURL: s.proofURL}
}

// checkProof checks the posted form's proof of work (proof.Check) and
// records its challenge as used, so each rendered form sends once. It
// returns what to tell the person when the form must be sent again ("":
// fine, or the proof is off).
func (s *Server) checkProof(r *http.Request) (string, error) {
	if s.proofKey == nil {
		return "", nil
	}
	nonce, err := proof.Check(s.proofKey, r.PostForm.Get("proof_challenge"), r.PostForm.Get("proof"), s.Clock.Now(), s.lim.Proof)
	if err != nil {
		s.Log.Info("signup proof refused", "ip", clientIP(r), "err", err)
	}
	switch {
	case errors.Is(err, proof.ErrTooSoon):
		return "That was quick: please wait a few seconds and send the form again.", nil
	case errors.Is(err, proof.ErrExpired):
		return "This form was open a long time: please send it again.", nil
	case err != nil:
		return "This form could not be checked: please send it again.", nil
	}
	once := ratelimit.Key{Name: "signup-proof:" + nonce, Limit: ratelimit.Limit{Every: s.lim.Proof.MaxAge, Burst: 1}}
	res, err := s.limiter.Take(r.Context(), once)
	if err != nil {
		return "", err
	}
	if !res.OK {
		return "This form was sent already: please send it again.", nil
	}
	return "", nil
}
