package postfixtest

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/emersion/go-smtp"
)

// config is what main.cf and master.cf are made from.
type config struct {
	Dir           string // root of the instance: conf, queue, data, maillog
	SMTPPort      int    // the smtpd listener on 127.0.0.1
	BounceDomain  string
	BounceTo      string // host:port
	DeadDomain    string
	DeadTo        string // host:port of the dead domain's MX
	LocalDomain   string // delivered by local(8), which knows no users
	DelayWarning  time.Duration
	QueueLifetime time.Duration
}

// seconds renders d as a Postfix time value in whole seconds, rounded up
// so that a positive duration never becomes zero (which would disable it).
func seconds(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	return strconv.FormatInt(int64(math.Ceil(d.Seconds())), 10) + "s"
}

// mainCF returns the main.cf of an instance that accepts mail from
// loopback only, sends mail for the dead and bounce domains to the given
// test servers, hands the local domain to local(8) with no aliases, no
// .forward files and mailboxes under Dir, and sends nothing anywhere
// else, with queue timers cut to seconds.
func mainCF(c config) string {
	lines := [][2]string{
		{"compatibility_level", "3.6"},
		{"queue_directory", c.Dir + "/queue"},
		{"data_directory", c.Dir + "/data"},
		{"mail_owner", "postfix"},
		{"setgid_group", "postdrop"},
		{"myhostname", "mta.postfixtest.localhost"},
		{"mydomain", "postfixtest.localhost"},
		{"myorigin", "$myhostname"},
		{"mydestination", c.LocalDomain},
		{"local_recipient_maps", ""},
		{"mail_spool_directory", c.Dir + "/mail"},
		{"forward_path", ""},
		{"mailbox_command", ""},
		{"allow_mail_to_commands", ""},
		{"allow_mail_to_files", ""},
		{"relay_domains", ""},
		{"inet_interfaces", "127.0.0.1"},
		{"inet_protocols", "ipv4"},
		{"mynetworks", "127.0.0.0/8"},
		{"smtpd_relay_restrictions", "permit_mynetworks, reject"},
		{"smtpd_peername_lookup", "no"},
		{"smtp_dns_support_level", "disabled"},
		{"smtp_tls_security_level", "none"},
		{"smtpd_tls_security_level", "none"},
		{"alias_maps", ""},
		{"alias_database", ""},
		{"biff", "no"},
		{"notify_classes", ""},
		{"default_transport", "error:5.7.1 this test instance sends no mail outside"},
		{"transport_maps", fmt.Sprintf("inline:{ %s=smtp:[%s, %s=smtp:[%s }",
			c.BounceDomain, bracketHost(c.BounceTo), c.DeadDomain, bracketHost(c.DeadTo))},
		{"in_flow_delay", "0s"},
		{"queue_run_delay", "1s"},
		{"minimal_backoff_time", "1s"},
		{"maximal_backoff_time", "1s"},
		{"delay_warning_time", seconds(c.DelayWarning)},
		{"maximal_queue_lifetime", seconds(c.QueueLifetime)},
		{"bounce_queue_lifetime", seconds(c.QueueLifetime)},
		{"maillog_file", c.Dir + "/maillog"},
		{"maillog_file_prefixes", c.Dir},
	}
	var b strings.Builder
	for _, kv := range lines {
		fmt.Fprintf(&b, "%s = %s\n", kv[0], kv[1])
	}
	return b.String()
}

// bracketHost turns "127.0.0.1:2525" into "127.0.0.1]:2525", the tail of a
// Postfix next hop "[host]:port" that skips MX lookups.
func bracketHost(hostPort string) string {
	i := strings.LastIndex(hostPort, ":")
	if i < 0 {
		return hostPort + "]"
	}
	return hostPort[:i] + "]" + hostPort[i:]
}

// masterCF returns a master.cf with the services a relay needs, none of
// them chrooted, and smtpd listening on 127.0.0.1 only.
func masterCF(port int) string {
	return fmt.Sprintf(`127.0.0.1:%d inet n - n - - smtpd
pickup    unix  n - n 60    1 pickup
cleanup   unix  n - n -     0 cleanup
qmgr      unix  n - n 300   1 qmgr
rewrite   unix  - - n -     - trivial-rewrite
bounce    unix  - - n -     0 bounce
defer     unix  - - n -     0 bounce
trace     unix  - - n -     0 bounce
verify    unix  - - n -     1 verify
flush     unix  n - n 1000? 0 flush
proxymap  unix  - - n -     - proxymap
smtp      unix  - - n -     - smtp
relay     unix  - - n -     - smtp
showq     unix  n - n -     - showq
error     unix  - - n -     - error
retry     unix  - - n -     - error
discard   unix  - - n -     - discard
anvil     unix  - - n -     1 anvil
scache    unix  - - n -     1 scache
local     unix  - n n -     - local
postlog   unix-dgram n - n - 1 postlogd
`, port)
}

// parseReply reads an SMTP reply such as "552 5.2.2 Mailbox full" into the
// error a server returns, or nil for a 2xx reply. The enhanced code is
// optional; the text defaults to a generic one.
func parseReply(reply string) (*smtp.SMTPError, error) {
	fields := strings.Fields(reply)
	if len(fields) == 0 {
		return nil, fmt.Errorf("postfixtest: empty reply")
	}
	code, err := strconv.Atoi(fields[0])
	if err != nil || code < 200 || code > 599 {
		return nil, fmt.Errorf("postfixtest: reply %q: code must be 200..599", reply)
	}
	if code < 300 {
		return nil, nil
	}
	if code < 400 {
		return nil, fmt.Errorf("postfixtest: reply %q: a 3xx reply to RCPT makes no sense", reply)
	}
	enh := smtp.NoEnhancedCode
	rest := fields[1:]
	if len(rest) > 0 {
		if e, ok := parseEnhanced(rest[0]); ok {
			if e[0] != code/100 {
				return nil, fmt.Errorf("postfixtest: reply %q: enhanced code class differs from the reply code", reply)
			}
			enh, rest = e, rest[1:]
		}
	}
	msg := strings.Join(rest, " ")
	if msg == "" {
		msg = "Rejected by the postfixtest recipient server"
	}
	return &smtp.SMTPError{Code: code, EnhancedCode: enh, Message: msg}, nil
}

// parseEnhanced reads "5.1.1" into an enhanced status code.
func parseEnhanced(s string) (smtp.EnhancedCode, bool) {
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return smtp.EnhancedCode{}, false
	}
	var e smtp.EnhancedCode
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 999 {
			return smtp.EnhancedCode{}, false
		}
		e[i] = n
	}
	if e[0] != 2 && e[0] != 4 && e[0] != 5 {
		return smtp.EnhancedCode{}, false
	}
	return e, true
}

// replyTable parses every reply of RejectWith, keyed by lower-case address.
func replyTable(m map[string]string) (map[string]*smtp.SMTPError, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make(map[string]*smtp.SMTPError, len(m))
	for _, k := range keys {
		e, err := parseReply(m[k])
		if err != nil {
			return nil, fmt.Errorf("RejectWith[%s]: %w", k, err)
		}
		out[strings.ToLower(strings.TrimSpace(k))] = e
	}
	return out, nil
}
