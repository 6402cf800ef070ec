package fetcher

import (
	"context"
	"errors"
	"testing"
)

func TestDescribe(t *testing.T) {
	tests := []struct {
		err           error
		reason, plain string
	}{
		{newError(KindTimeout, "", nil), "timeout", "that address did not answer in time"},
		{context.DeadlineExceeded, "timeout", "that address did not answer in time"},
		{newError(KindDNS, "", nil), "DNS lookup failed", "that address did not answer (its name does not exist)"},
		{newError(KindTLS, "", nil), "TLS error", "that address did not answer"},
		{newError(KindConnection, "", nil), "connection failed", "that address did not answer"},
		{newError(KindTooLarge, "", nil), "body too large", "that page is too large (over 10 MB)"},
		{newError(KindTooManyRedirects, "", nil), "too many redirects", "that address redirects too many times"},
		{newError(KindPrivateAddress, "", nil), "refused: private or local network address", "that address is on a private or local network, which this feedmail does not visit (its operator can allow it with FEEDMAIL_ALLOW_PRIVATE_NETWORKS=1)"},
		{newError(KindBadURL, "", nil), "bad URL", "that is not a web address feedmail can visit"},
		{newError(KindBadEncoding, "", nil), "bad content encoding", "that address sent something that could not be decoded"},
		{context.Canceled, "fetch failed", "the check was interrupted; please try again"},
		{errors.New("something else"), "fetch failed", "that address did not answer"},
	}
	for _, tt := range tests {
		if got := Describe(tt.err); got.Reason != tt.reason || got.Plain != tt.plain {
			t.Errorf("Describe(%v) = %+v, want %q, %q", tt.err, got, tt.reason, tt.plain)
		}
	}
}
