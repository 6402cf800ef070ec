package esp

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/feedmail/feedmail/internal/bounce"
)

// PostmarkAuth is the user and password Postmark sends with each webhook
// (HTTP basic authentication, set in the webhook's URL or its "Basic
// auth credentials"): Postmark's documented way to authenticate a
// webhook, since it signs nothing.
type PostmarkAuth struct{ User, Password string }

// ParsePostmarkAuth reads "user:password" (FEEDMAIL_POSTMARK_WEBHOOK_AUTH).
func ParsePostmarkAuth(s string) (PostmarkAuth, error) {
	user, pass, ok := strings.Cut(s, ":")
	if !ok || user == "" || pass == "" {
		return PostmarkAuth{}, fmt.Errorf("want user:password, both non-empty")
	}
	if len(pass) < 16 {
		return PostmarkAuth{}, fmt.Errorf("the password is under 16 characters; use a long random one")
	}
	return PostmarkAuth{User: user, Password: pass}, nil
}

// Check verifies an Authorization header value against a, in time that
// does not depend on where they differ.
func (a PostmarkAuth) Check(authorization string) error {
	scheme, cred, ok := strings.Cut(strings.TrimSpace(authorization), " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return fmt.Errorf("%w: no basic authentication", ErrUnauthenticated)
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
	if err != nil {
		return fmt.Errorf("%w: basic credentials are not base64", ErrForged)
	}
	user, pass, _ := strings.Cut(string(raw), ":")
	gotU, gotP := sha256.Sum256([]byte(user)), sha256.Sum256([]byte(pass))
	wantU, wantP := sha256.Sum256([]byte(a.User)), sha256.Sum256([]byte(a.Password))
	if subtle.ConstantTimeCompare(gotU[:], wantU[:])&subtle.ConstantTimeCompare(gotP[:], wantP[:]) != 1 {
		return fmt.Errorf("%w: wrong user or password", ErrForged)
	}
	return nil
}

// postmarkRecord is a Postmark bounce or spam complaint webhook.
type postmarkRecord struct {
	RecordType  string            `json:"RecordType"`
	Type        string            `json:"Type"`
	TypeCode    int               `json:"TypeCode"`
	Details     string            `json:"Details"`
	Description string            `json:"Description"`
	Email       string            `json:"Email"`
	MessageID   string            `json:"MessageID"`
	Metadata    map[string]string `json:"Metadata"`
	Content     string            `json:"Content"`
}

// postmarkTypes maps Postmark's bounce types (by name and code) onto the
// vocabulary; kind "" means the type is no failure report and is ignored
// (auto-replies, (un)subscribe requests, an address the operator
// deactivated, inbound errors, a template that did not render).
var postmarkTypes = map[string]struct {
	code    int
	kind    Kind
	hint    bounce.Reason
	delayed bool
}{
	"HardBounce":              {1, KindBounce, bounce.UnknownUser, false},
	"Transient":               {2, KindBounce, bounce.Temporary, true},
	"Unsubscribe":             {16, "", "", false},
	"Subscribe":               {32, "", "", false},
	"AutoResponder":           {64, "", "", false},
	"AddressChange":           {128, KindBounce, bounce.Moved, false},
	"DnsError":                {256, KindBounce, bounce.Temporary, false},
	"SpamNotification":        {512, KindBounce, bounce.Policy, false},
	"OpenRelayTest":           {1024, "", "", false},
	"Unknown":                 {2048, KindBounce, bounce.Undetermined, false},
	"SoftBounce":              {4096, KindBounce, bounce.Temporary, false},
	"VirusNotification":       {8192, KindBounce, bounce.Policy, false},
	"ChallengeVerification":   {16384, "", "", false},
	"BadEmailAddress":         {100000, KindBounce, bounce.UnknownUser, false},
	"SpamComplaint":           {100001, KindComplaint, "", false},
	"ManuallyDeactivated":     {100002, "", "", false},
	"Unconfirmed":             {100003, "", "", false},
	"Blocked":                 {100006, KindBounce, bounce.Blocked, false},
	"SMTPApiError":            {100007, KindBounce, bounce.Syntax, false},
	"InboundError":            {100008, "", "", false},
	"DMARCPolicy":             {100009, KindBounce, bounce.Authentication, false},
	"TemplateRenderingFailed": {100010, "", "", false},
}

// ParsePostmark reads one Postmark webhook: RecordType Bounce or
// SpamComplaint is a notice, any other record (Delivery, Open, Click,
// SubscriptionChange) is ignored. Postmark's MessageID is its own, not
// the email's: the email's Message-ID is looked for in Metadata (a key
// such as "message-id") and in the Content dump of the returned message,
// which Postmark includes when the webhook's "Include bounce content" is
// on; return tokens in the dump count too.
func ParsePostmark(body []byte, opt Options) (Batch, error) {
	var r postmarkRecord
	if err := json.Unmarshal(body, &r); err != nil {
		return Batch{}, fmt.Errorf("%w: Postmark JSON: %v", ErrMalformed, err)
	}
	if r.RecordType == "" {
		return Batch{}, fmt.Errorf("%w: Postmark record without RecordType", ErrMalformed)
	}
	if r.RecordType != "Bounce" && r.RecordType != "SpamComplaint" {
		return Batch{Ignored: 1}, nil
	}
	typ, ok := postmarkTypes[r.Type]
	if !ok {
		for name, t := range postmarkTypes {
			if t.code == r.TypeCode && r.TypeCode != 0 {
				typ, ok, r.Type = t, true, name
			}
		}
	}
	if r.RecordType == "SpamComplaint" {
		typ, ok = postmarkTypes["SpamComplaint"], true
	}
	if !ok {
		typ = postmarkTypes["Unknown"]
	}
	if typ.kind == "" {
		return Batch{Ignored: 1}, nil
	}
	var ids []string
	for k, v := range r.Metadata {
		if norm := strings.NewReplacer("-", "", "_", "").Replace(strings.ToLower(k)); norm == "messageid" {
			ids = addID(ids, v)
		}
	}
	for _, v := range headerValues(r.Content, "Message-ID", maxIDs) {
		ids = addID(ids, v)
	}
	n := Notice{Kind: typ.kind, Recipient: r.Email, MessageIDs: ids, Tokens: opt.tokens(nil, r.Content),
		Event: r.RecordType + " " + r.Type}
	if typ.kind == KindBounce {
		text := oneLine(r.Details)
		n.Failure = bounce.Failure{Status: statusIn("", text), Code: replyCode(strings.TrimPrefix(text, "smtp;")),
			Text: text, Hint: typ.hint, Delayed: typ.delayed, Final: !typ.delayed}
	}
	return Batch{Notices: []Notice{n}}, nil
}

// headerValues returns the Message-IDs of the header fields called name
// anywhere in text (a dump of a message and the message it returns), at
// most max of them, deduplicated.
func headerValues(text, name string, max int) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	prefix := strings.ToLower(name) + ":"
	for sc.Scan() && len(out) < max {
		line := sc.Text()
		if len(line) > len(prefix) && strings.EqualFold(line[:len(prefix)], prefix) {
			out = addID(out, line[len(prefix):])
		}
	}
	return out
}
