package web

import (
	"net/http"

	"github.com/feedmail/feedmail/internal/links"
)

// routes registers the pages and forms: the public contract (signup,
// confirm, account, unsubscribe, status) plus the account page's own
// actions and the sign-in form. Paths come from links.Routes.
func (s *Server) routes() {
	s.register(links.GroupPages, map[string]http.HandlerFunc{
		"signupPage":               s.signupPage,
		"subscribePage":            s.subscribePage,
		"createSubscription":       s.createSubscription,
		"signInPage":               s.signInPage,
		"signIn":                   s.signIn,
		"confirmPage":              s.confirmPage,
		"confirm":                  s.confirm,
		"accountPage":              s.accountPage,
		"accountDelivery":          s.accountDelivery,
		"accountUnsubscribe":       s.accountUnsubscribe,
		"accountSettings":          s.accountSettings,
		"accountChannel":           s.accountChannel,
		"accountChannelTest":       s.accountChannelTest,
		"accountDeliveryAdd":       s.accountDeliveryAdd,
		"accountConfirm":           s.accountConfirm,
		"accountConfirmAll":        s.accountConfirmAll,
		"accountDigest":            s.accountDigest,
		"accountDigestDelete":      s.accountDigestDelete,
		"accountDigestChannel":     s.accountDigestChannel,
		"accountDigestChannelTest": s.accountDigestChannelTest,
		"accountImport":            s.accountImport,
		"accountExport":            s.accountExport,
		"accountData":              s.accountData,
		"accountLedger":            s.accountLedger,
		"accountDeletePage":        s.accountDeletePage,
		"accountDelete":            s.accountDelete,
		"accountPause":             s.accountPause,
		"accountResume":            s.accountResume,
		"accountPay":               s.accountPay,
		"publisherPage":            s.publisherPage,
		"publisherClaim":           s.publisherClaim,
		"publisherCheck":           s.publisherCheck,
		"publisherMove":            s.publisherMove,
		"unsubscribePage":          s.unsubscribePage,
		"unsubscribePost":          s.unsubscribePost,
		"movePage":                 s.movePage,
		"movePost":                 s.movePost,
		"feedStatus":               s.feedStatus,
		"previewPage":              s.previewPage,
		"botPage":                  s.botPage,
		"static":                   s.serveStatic,
		"api":                      s.apiHandler(),
		"accountTokenCreate":       s.accountTokenCreate,
		"accountTokenRevoke":       s.accountTokenRevoke,
		"accountSignOut":           s.accountSignOut,
		"accountFreshLink":         s.accountFreshLink,
	})
}

// register adds every route of group in links.Routes, each served by the
// handler of its name. It panics when a route of the group has no handler
// or a handler no route: a build defect, caught by the tests.
func (s *Server) register(group string, handlers map[string]http.HandlerFunc) {
	used := map[string]bool{}
	for _, rt := range links.Routes() {
		if rt.Group != group {
			continue
		}
		h, ok := handlers[rt.Name]
		if !ok {
			panic("web: no handler for route " + rt.Name)
		}
		used[rt.Name] = true
		s.mux.Handle(rt.Pattern(), h)
	}
	for name := range handlers {
		if !used[name] {
			panic("web: handler " + name + " has no route in group " + group)
		}
	}
}

// crossOriginExempt are the patterns that other machines POST to (see
// links.Route.Machine); cross-origin protection does not apply to them.
func crossOriginExempt() []string {
	var out []string
	for _, rt := range links.Routes() {
		if rt.Machine {
			out = append(out, rt.Pattern())
		}
	}
	return out
}

// orNotFound answers a request no route has, for any method, with the
// site's own "Page not found" page instead of the mux's plain text; a
// known path asked with the wrong method still gets the mux's 405.
func (s *Server) orNotFound(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern == "" && !routedForSomeMethod(mux, r) {
			s.notFound(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// routedForSomeMethod reports whether r's path has a route under GET or
// POST (so the mux's answer is 405, not 404).
func routedForSomeMethod(mux *http.ServeMux, r *http.Request) bool {
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		if m == r.Method {
			continue
		}
		r2 := r.Clone(r.Context())
		r2.Method = m
		if _, pattern := mux.Handler(r2); pattern != "" {
			return true
		}
	}
	return false
}
