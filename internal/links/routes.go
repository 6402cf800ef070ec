package links

import "strings"

// Paths of feedmail's HTTP routes, as http.ServeMux patterns. Each is
// written here once: package web registers its handlers from Routes and
// the builders in this package fill the same paths in.
const (
	PathHome                = "/{$}"
	PathSubscribe           = "/subscribe"
	PathSubscriptions       = "/subscriptions"
	PathSignIn              = "/signin"
	PathConfirm             = "/confirm/{token}"
	PathAccount             = "/account/{token}"
	PathAccountDelivery     = "/account/{token}/subscriptions/{id}/delivery"
	PathAccountUnsub        = "/account/{token}/subscriptions/{id}/unsubscribe"
	PathAccountSettings     = "/account/{token}/subscriptions/{id}/settings"
	PathAccountChannel      = "/account/{token}/subscriptions/{id}/channel"
	PathAccountChannelTest  = "/account/{token}/subscriptions/{id}/channel/test"
	PathAccountDeliveryAdd  = "/account/{token}/subscriptions/{id}/deliveries"
	PathAccountConfirm      = "/account/{token}/subscriptions/{id}/confirm"
	PathAccountConfirmAll   = "/account/{token}/subscriptions/confirm-all"
	PathAccountDigests      = "/account/{token}/digests"
	PathAccountDigestDelete = "/account/{token}/digests/{id}/delete"
	PathAccountDigestChan   = "/account/{token}/digests/{id}/channel"
	PathAccountDigestTest   = "/account/{token}/digests/{id}/channel/test"
	PathAccountOPML         = "/account/{token}/opml"
	PathAccountData         = "/account/{token}/export"
	PathAccountLedger       = "/account/{token}/ledger.csv"
	PathAccountDelete       = "/account/{token}/delete"
	PathAccountPause        = "/account/{token}/pause"
	PathAccountResume       = "/account/{token}/resume"
	PathAccountPay          = "/account/{token}/subscriptions/{id}/pay"
	PathPublisher           = "/account/{token}/publisher"
	PathPublisherClaim      = "/account/{token}/publisher/claims"
	PathPublisherCheck      = "/account/{token}/publisher/claims/{id}/check"
	PathPublisherMove       = "/account/{token}/publisher/feeds/{id}/move"
	PathAccountAPITokens    = "/account/{token}/api-tokens"
	PathAccountAPIRevoke    = "/account/{token}/api-tokens/{id}/revoke"
	PathAccountSignOut      = "/account/{token}/sign-out"
	PathAccountFreshLink    = "/account/{token}/fresh-link"
	PathUnsubscribe         = "/unsubscribe/{token}"
	PathMove                = "/moves/{token}"
	PathFeedStatus          = "/feeds/status"
	PathPreview             = "/preview"
	PathBot                 = "/bot"
	PathStatic              = "/static/{file}"
	PathHealthz             = "/healthz"
	PathMetrics             = "/metrics"
	PathCredits             = "/credits"
	PathCheckout            = "/credits/checkout"
	PathStripeWebhook       = "/webhooks/stripe"
	PathESPWebhook          = "/webhooks/{provider}"
	PathWebSub              = "/websub/{token}"
	PathPing                = "/ping"
	PathRPC2                = "/RPC2"
	// PathAPI is the JSON API's prefix (package api routes within it).
	PathAPI = "/api/v1/"
)

// Route groups: which part of the server registers a route.
const (
	GroupPages   = "pages"   // the pages and forms, always
	GroupHealth  = "health"  // /healthz, always
	GroupMetrics = "metrics" // /metrics, when metrics are on
	GroupCredits = "credits" // web.Server.MountCredits
	GroupWebSub  = "websub"  // web.Server.MountWebSub
	GroupPings   = "pings"   // web.Server.MountPings
	GroupESP     = "esp"     // web.Server.MountESP
)

// Route is one HTTP route.
type Route struct {
	Name   string // the handler's name in package web
	Method string
	Path   string
	Group  string
	// Machine marks routes that other machines POST to (mail providers,
	// Stripe, hubs, pingers): authorised by tokens, signatures or by being
	// harmless, so browser cross-origin protection does not apply.
	Machine bool
}

// Pattern is the route's http.ServeMux pattern, "GET /confirm/{token}"
// (the path alone for a route of every method).
func (r Route) Pattern() string {
	if r.Method == "" {
		return r.Path
	}
	return r.Method + " " + r.Path
}

// Routes returns every route feedmail serves (a fresh slice).
func Routes() []Route {
	return []Route{
		{Name: "signupPage", Method: "GET", Path: PathHome, Group: GroupPages},
		{Name: "subscribePage", Method: "GET", Path: PathSubscribe, Group: GroupPages},
		{Name: "createSubscription", Method: "POST", Path: PathSubscriptions, Group: GroupPages},
		{Name: "signInPage", Method: "GET", Path: PathSignIn, Group: GroupPages},
		{Name: "signIn", Method: "POST", Path: PathSignIn, Group: GroupPages},
		{Name: "confirmPage", Method: "GET", Path: PathConfirm, Group: GroupPages},
		{Name: "confirm", Method: "POST", Path: PathConfirm, Group: GroupPages},
		{Name: "accountPage", Method: "GET", Path: PathAccount, Group: GroupPages},
		{Name: "accountDelivery", Method: "POST", Path: PathAccountDelivery, Group: GroupPages},
		{Name: "accountUnsubscribe", Method: "POST", Path: PathAccountUnsub, Group: GroupPages},
		{Name: "accountSettings", Method: "POST", Path: PathAccountSettings, Group: GroupPages},
		{Name: "accountChannel", Method: "POST", Path: PathAccountChannel, Group: GroupPages},
		{Name: "accountChannelTest", Method: "POST", Path: PathAccountChannelTest, Group: GroupPages},
		{Name: "accountDeliveryAdd", Method: "POST", Path: PathAccountDeliveryAdd, Group: GroupPages},
		{Name: "accountConfirm", Method: "POST", Path: PathAccountConfirm, Group: GroupPages},
		{Name: "accountConfirmAll", Method: "POST", Path: PathAccountConfirmAll, Group: GroupPages},
		{Name: "accountDigest", Method: "POST", Path: PathAccountDigests, Group: GroupPages},
		{Name: "accountDigestDelete", Method: "POST", Path: PathAccountDigestDelete, Group: GroupPages},
		{Name: "accountDigestChannel", Method: "POST", Path: PathAccountDigestChan, Group: GroupPages},
		{Name: "accountDigestChannelTest", Method: "POST", Path: PathAccountDigestTest, Group: GroupPages},
		{Name: "accountImport", Method: "POST", Path: PathAccountOPML, Group: GroupPages},
		{Name: "accountExport", Method: "GET", Path: PathAccountOPML, Group: GroupPages},
		{Name: "accountData", Method: "GET", Path: PathAccountData, Group: GroupPages},
		{Name: "accountLedger", Method: "GET", Path: PathAccountLedger, Group: GroupPages},
		{Name: "accountDeletePage", Method: "GET", Path: PathAccountDelete, Group: GroupPages},
		{Name: "accountDelete", Method: "POST", Path: PathAccountDelete, Group: GroupPages},
		{Name: "accountPause", Method: "POST", Path: PathAccountPause, Group: GroupPages},
		{Name: "accountResume", Method: "POST", Path: PathAccountResume, Group: GroupPages},
		{Name: "accountPay", Method: "POST", Path: PathAccountPay, Group: GroupPages},
		{Name: "publisherPage", Method: "GET", Path: PathPublisher, Group: GroupPages},
		{Name: "publisherClaim", Method: "POST", Path: PathPublisherClaim, Group: GroupPages},
		{Name: "publisherCheck", Method: "POST", Path: PathPublisherCheck, Group: GroupPages},
		{Name: "publisherMove", Method: "POST", Path: PathPublisherMove, Group: GroupPages},
		{Name: "accountTokenCreate", Method: "POST", Path: PathAccountAPITokens, Group: GroupPages},
		{Name: "accountTokenRevoke", Method: "POST", Path: PathAccountAPIRevoke, Group: GroupPages},
		{Name: "accountSignOut", Method: "POST", Path: PathAccountSignOut, Group: GroupPages},
		{Name: "accountFreshLink", Method: "POST", Path: PathAccountFreshLink, Group: GroupPages},
		{Name: "unsubscribePage", Method: "GET", Path: PathUnsubscribe, Group: GroupPages},
		// RFC 8058 one-click, POSTed by mail providers.
		{Name: "unsubscribePost", Method: "POST", Path: PathUnsubscribe, Group: GroupPages, Machine: true},
		// A feed's new address: follow an offer, or undo a move.
		{Name: "movePage", Method: "GET", Path: PathMove, Group: GroupPages},
		{Name: "movePost", Method: "POST", Path: PathMove, Group: GroupPages},
		{Name: "feedStatus", Method: "GET", Path: PathFeedStatus, Group: GroupPages},
		// The email a choice would send, shown in a sandboxed frame.
		{Name: "previewPage", Method: "GET", Path: PathPreview, Group: GroupPages},
		// The page the poller's User-Agent points publishers to.
		{Name: "botPage", Method: "GET", Path: PathBot, Group: GroupPages},
		{Name: "static", Method: "GET", Path: PathStatic, Group: GroupPages},
		{Name: "healthz", Method: "GET", Path: PathHealthz, Group: GroupHealth},
		{Name: "metrics", Method: "GET", Path: PathMetrics, Group: GroupMetrics},
		{Name: "creditsPage", Method: "GET", Path: PathCredits, Group: GroupCredits},
		{Name: "checkout", Method: "POST", Path: PathCheckout, Group: GroupCredits},
		{Name: "stripeWebhook", Method: "POST", Path: PathStripeWebhook, Group: GroupCredits, Machine: true},
		{Name: "websubVerify", Method: "GET", Path: PathWebSub, Group: GroupWebSub},
		{Name: "websubDistribute", Method: "POST", Path: PathWebSub, Group: GroupWebSub, Machine: true},
		{Name: "ping", Method: "GET", Path: PathPing, Group: GroupPings},
		{Name: "ping", Method: "POST", Path: PathPing, Group: GroupPings, Machine: true},
		{Name: "xmlrpcPing", Method: "POST", Path: PathRPC2, Group: GroupPings, Machine: true},
		// Email services' bounce and complaint notifications (ses,
		// postmark, sendgrid, mailgun); /webhooks/stripe is more specific.
		{Name: "espWebhook", Method: "POST", Path: PathESPWebhook, Group: GroupESP, Machine: true},
		// The JSON API, every method: bearer tokens, never cookies, so
		// cross-origin protection has nothing to protect.
		{Name: "api", Path: PathAPI, Group: GroupPages, Machine: true},
	}
}

// Fill returns path with its {wildcards} replaced by values, in order, and
// the {$} end anchor dropped (a wildcard without a value is left as it is).
func Fill(path string, values ...string) string {
	path = strings.TrimSuffix(path, "{$}")
	var b strings.Builder
	for len(path) > 0 {
		i := strings.IndexByte(path, '{')
		j := strings.IndexByte(path[max(i, 0):], '}')
		if i < 0 || j < 0 || len(values) == 0 {
			b.WriteString(path)
			break
		}
		b.WriteString(path[:i])
		b.WriteString(values[0])
		values = values[1:]
		path = path[i+j+1:]
	}
	return b.String()
}

// PathOf returns the path of the route called name, filled with values
// (Fill); it panics on an unknown name, a defect the tests catch.
func PathOf(name string, values ...string) string {
	for _, rt := range Routes() {
		if rt.Name == name {
			return Fill(rt.Path, values...)
		}
	}
	panic("links: no route " + name)
}
