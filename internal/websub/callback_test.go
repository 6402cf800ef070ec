package websub

import (
	"strings"
	"testing"
)

func TestCallbackTag(t *testing.T) {
	a, b := CallbackTag("secret-a"), CallbackTag("secret-b")
	if a == b || len(a) != 22 || strings.Contains(a, CallbackSep) {
		t.Fatalf("tags %q and %q: want 22 base64url characters, different per secret", a, b)
	}
	for _, c := range []struct {
		secret, tag string
		ok          bool
	}{
		{"secret-a", a, true},
		{"secret-b", a, false},
		{"secret-a", a[:21], false},
		{"", CallbackTag(""), false}, // no subscription, no callback
	} {
		if got := CallbackTagOK(c.secret, c.tag); got != c.ok {
			t.Errorf("CallbackTagOK(%q, %q) = %v, want %v", c.secret, c.tag, got, c.ok)
		}
	}
	if s, tag := SplitCallback("AQUCAEde." + a); s != "AQUCAEde" || tag != a {
		t.Errorf("SplitCallback: %q, %q", s, tag)
	}
	if s, tag := SplitCallback("AQUCAEde"); s != "AQUCAEde" || tag != "" {
		t.Errorf("SplitCallback of an untagged token: %q, %q", s, tag)
	}
}
