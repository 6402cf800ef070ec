package web

// routes registers the pages (DESIGN.md's contract, plus the account page's
// own actions and the sign-in form).
func (s *Server) routes() {
	m := s.mux
	m.HandleFunc("GET /{$}", s.signupPage)
	m.HandleFunc("GET /subscribe", s.subscribePage)
	m.HandleFunc("POST /subscriptions", s.createSubscription)
	m.HandleFunc("GET /signin", s.signInPage)
	m.HandleFunc("POST /signin", s.signIn)

	m.HandleFunc("GET /confirm/{token}", s.confirmPage)
	m.HandleFunc("POST /confirm/{token}", s.confirm)

	m.HandleFunc("GET /account/{token}", s.accountPage)
	m.HandleFunc("POST /account/{token}/subscriptions/{id}/delivery", s.accountDelivery)
	m.HandleFunc("POST /account/{token}/subscriptions/{id}/unsubscribe", s.accountUnsubscribe)
	m.HandleFunc("POST /account/{token}/subscriptions/{id}/confirm", s.accountConfirm)
	m.HandleFunc("POST /account/{token}/digests", s.accountDigest)
	m.HandleFunc("POST /account/{token}/opml", s.accountImport)
	m.HandleFunc("GET /account/{token}/opml", s.accountExport)

	m.HandleFunc("GET /unsubscribe/{token}", s.unsubscribePage)
	m.HandleFunc("POST /unsubscribe/{token}", s.unsubscribePost)

	m.HandleFunc("GET /feeds/status", s.feedStatus)
	m.HandleFunc("GET /static/{file}", s.serveStatic)
}
