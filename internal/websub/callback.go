package websub

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"
)

// CallbackSep separates a callback token's signed feed id from its tag
// (CallbackTag); it is not in the base64url alphabet of either.
const CallbackSep = "."

// callbackTagLabel separates the tag's MAC from the secret's other use
// (X-Hub-Signature).
const callbackTagLabel = "feedmail/websub-callback/v1"

// CallbackTag is the part of a callback URL that names one subscription:
// 16 bytes of HMAC-SHA-256 under the subscription's secret (hub.secret,
// random and made anew for each new subscription), base64url. Without the
// secret nobody can make it, so the callback cannot be derived from the
// feed id alone, and a hub (or anyone who saw the URL) of an ended
// subscription holds a callback that no longer works.
func CallbackTag(secret string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(callbackTagLabel))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:16])
}

// SplitCallback splits a callback token into its signed feed id and its
// tag ("" for a callback made before callbacks carried one).
func SplitCallback(tok string) (signed, tag string) {
	signed, tag, _ = strings.Cut(tok, CallbackSep)
	return signed, tag
}

// CallbackTagOK reports, in constant time, whether tag is secret's
// CallbackTag; never for an empty secret.
func CallbackTagOK(secret, tag string) bool {
	return secret != "" && hmac.Equal([]byte(tag), []byte(CallbackTag(secret)))
}
