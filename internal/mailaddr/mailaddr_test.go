package mailaddr

import "testing"

func TestMailbox(t *testing.T) {
	cases := []struct{ in, want string }{
		{"alice@example.com", "alice@example.com"},
		{"Alice@Example.COM", "alice@example.com"},
		{"alice+news@example.com", "alice@example.com"},
		{"alice+1+2@example.com", "alice@example.com"},
		{"alice.smith@example.com", "alice.smith@example.com"}, // dots matter outside Gmail
		{"a.l.i.c.e@gmail.com", "alice@gmail.com"},
		{"A.Lice+x@GMail.com", "alice@gmail.com"},
		{"alice@googlemail.com", "alice@gmail.com"},
		{"al.ice+tag@googlemail.com", "alice@gmail.com"},
		{"alice@example.com.", "alice@example.com"},
		{" alice@example.com ", "alice@example.com"},
		{"+only@example.com", "+only@example.com"}, // nothing before the tag: kept
		{"...@gmail.com", "...@gmail.com"},
		{`"a+b"@example.com`, `"a+b"@example.com`},
		{"alice@sub.gmail.com", "alice@sub.gmail.com"},
		{"noat", "noat"},
	}
	for _, c := range cases {
		if got := Mailbox(c.in); got != c.want {
			t.Errorf("Mailbox(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestDomain(t *testing.T) {
	cases := []struct{ in, want string }{
		{"a@Example.COM", "example.com"},
		{"a@example.com.", "example.com"},
		{`"x@y"@example.org`, "example.org"},
		{"none", ""},
	}
	for _, c := range cases {
		if got := Domain(c.in); got != c.want {
			t.Errorf("Domain(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestIPDomain(t *testing.T) {
	cases := []struct {
		in   string
		want bool
	}{
		{"f@[127.0.0.1]", true},
		{"f@[IPv6:::1]", true},
		{"f@[10.0.0.1", true},
		{"f@127.0.0.1", true},
		{"f@::1", true},
		{"f@example.com", false},
		{"f@1.example", false},
		{"f@localhost", false},
	}
	for _, c := range cases {
		if got := IPDomain(c.in); got != c.want {
			t.Errorf("IPDomain(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}
