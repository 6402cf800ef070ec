package postfixtest

import (
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
)

func TestParseReply(t *testing.T) {
	cases := []struct {
		in      string
		code    int
		enh     smtp.EnhancedCode
		msg     string
		accept  bool
		wantErr bool
	}{
		{in: "552 5.2.2 Mailbox full", code: 552, enh: smtp.EnhancedCode{5, 2, 2}, msg: "Mailbox full"},
		{in: "450 4.2.1 Try later", code: 450, enh: smtp.EnhancedCode{4, 2, 1}, msg: "Try later"},
		{in: "550 No such user", code: 550, enh: smtp.NoEnhancedCode, msg: "No such user"},
		{in: "554 5.7.1", code: 554, enh: smtp.EnhancedCode{5, 7, 1}, msg: "Rejected by the postfixtest recipient server"},
		{in: "  550   5.1.1   gone  away ", code: 550, enh: smtp.EnhancedCode{5, 1, 1}, msg: "gone away"},
		{in: "250 OK", accept: true},
		{in: "250", accept: true},
		{in: "", wantErr: true},
		{in: "abc", wantErr: true},
		{in: "199 too low", wantErr: true},
		{in: "600 too high", wantErr: true},
		{in: "354 go on", wantErr: true},
		{in: "550 4.1.1 class mismatch", wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseReply(tc.in)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("no error, got %+v", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.accept {
				if got != nil {
					t.Fatalf("got %+v, want accept (nil)", got)
				}
				return
			}
			if got == nil || got.Code != tc.code || got.EnhancedCode != tc.enh || got.Message != tc.msg {
				t.Fatalf("got %+v, want %d %v %q", got, tc.code, tc.enh, tc.msg)
			}
		})
	}
}

func TestReplyTableKeysAreLowerCase(t *testing.T) {
	tab, err := replyTable(map[string]string{" Full@Dead.Test ": "552 5.2.2 Mailbox full", "ok@dead.test": "250 OK"})
	if err != nil {
		t.Fatal(err)
	}
	if e := tab["full@dead.test"]; e == nil || e.Code != 552 {
		t.Errorf("full@dead.test: %+v", e)
	}
	if e, ok := tab["ok@dead.test"]; !ok || e != nil {
		t.Errorf("ok@dead.test: %+v %v, want an accepting entry", e, ok)
	}
	if _, err := replyTable(map[string]string{"x@dead.test": "bogus"}); err == nil || !strings.Contains(err.Error(), "x@dead.test") {
		t.Errorf("bad reply: error %v, want one naming the address", err)
	}
}

func TestSecondsAndNextHop(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{{0, "0s"}, {-time.Second, "0s"}, {time.Millisecond, "1s"}, {time.Second, "1s"}, {1500 * time.Millisecond, "2s"}, {time.Hour, "3600s"}} {
		if got := seconds(tc.d); got != tc.want {
			t.Errorf("seconds(%s) = %s, want %s", tc.d, got, tc.want)
		}
	}
	if got := bracketHost("127.0.0.1:2525"); got != "127.0.0.1]:2525" {
		t.Errorf("bracketHost = %s", got)
	}
}

func TestMainCFRoutesOnlyTheTestDomains(t *testing.T) {
	cf := mainCF(config{
		Dir: "/tmp/x", SMTPPort: 2500, BounceDomain: "bounce.test", BounceTo: "127.0.0.1:2601",
		DeadDomain: "dead.test", DeadTo: "127.0.0.1:2602", LocalDomain: "nouser.test", DelayWarning: time.Second, QueueLifetime: time.Hour,
	})
	for _, want := range []string{
		"transport_maps = inline:{ bounce.test=smtp:[127.0.0.1]:2601, dead.test=smtp:[127.0.0.1]:2602 }\n",
		"inet_interfaces = 127.0.0.1\n",
		"mydestination = nouser.test\n",
		"local_recipient_maps = \n",
		"alias_maps = \n",
		"forward_path = \n",
		"mail_spool_directory = /tmp/x/mail\n",
		"default_transport = error:",
		"queue_directory = /tmp/x/queue\n",
		"delay_warning_time = 1s\n",
		"maximal_queue_lifetime = 3600s\n",
	} {
		if !strings.Contains(cf, want) {
			t.Errorf("main.cf lacks %q:\n%s", want, cf)
		}
	}
	master := masterCF(2500)
	if !strings.HasPrefix(master, "127.0.0.1:2500 inet n - n ") {
		t.Errorf("master.cf smtpd line: %q", strings.SplitN(master, "\n", 2)[0])
	}
	for _, line := range strings.Split(strings.TrimSpace(master), "\n") {
		if f := strings.Fields(line); len(f) < 8 || f[4] != "n" {
			t.Errorf("service not unchrooted: %q", line)
		}
	}
}
