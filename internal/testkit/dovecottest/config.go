package dovecottest

import (
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"
)

// capabilities are what Dovecot 2.3 announces after login by default.
var capabilities = strings.Fields(`IMAP4rev1 SASL-IR LOGIN-REFERRALS ID ENABLE IDLE SORT
	SORT=DISPLAY THREAD=REFERENCES THREAD=REFS THREAD=ORDEREDSUBJECT MULTIAPPEND URL-PARTIAL
	CATENATE UNSELECT CHILDREN NAMESPACE UIDPLUS LIST-EXTENDED I18NLEVEL=1 CONDSTORE QRESYNC
	ESEARCH ESORT SEARCHRES WITHIN CONTEXT=SEARCH LIST-STATUS BINARY MOVE SNIPPET=FUZZY
	PREVIEW=FUZZY PREVIEW STATUS=SIZE SAVEDATE LITERAL+ NOTIFY`)

// config returns a Dovecot 2.3 configuration: everything under s.Dir,
// imap only, TLS required, one user in a passwd-file, Maildir mail owned by
// u.
func (s *Server) config(u account) string {
	_, imapPort, _ := net.SplitHostPort(s.IMAPAddr)
	_, imapsPort, _ := net.SplitHostPort(s.IMAPSAddr)
	d := func(name string) string { return filepath.Join(s.Dir, name) }
	return fmt.Sprintf(`# written by dovecottest
base_dir = %[1]s
state_dir = %[2]s
log_path = %[3]s
protocols = imap
listen = 127.0.0.1
ssl = required
ssl_cert = <%[4]s
ssl_key = <%[5]s
auth_mechanisms = plain login
disable_plaintext_auth = yes
default_internal_user = %[6]s
default_internal_group = %[14]s
default_login_user = %[7]s
first_valid_uid = %[8]d
last_valid_uid = 0
first_valid_gid = %[9]d
mail_location = maildir:~/Maildir
passdb {
  driver = passwd-file
  args = scheme=PLAIN username_format=%%u %[10]s
}
userdb {
  driver = static
  args = uid=%[8]d gid=%[9]d home=%[11]s/%%u
}
# no chroot: a user other than root may not chroot
service anvil {
  chroot =
}
service imap-login {
  chroot =
  inet_listener imap {
    address = 127.0.0.1
    port = %[12]s
  }
  inet_listener imaps {
    address = 127.0.0.1
    port = %[13]s
    ssl = yes
  }
}
`, d("run"), d("state"), d("dovecot.log"), d("cert.pem"), d("key.pem"),
		u.internal, u.login, u.uid, u.gid, d("passwd"), d("mail"), imapPort, imapsPort, u.group) +
		s.capabilityLine()
}

// capabilityLine overrides the announced capabilities when options drop
// some, else returns "".
func (s *Server) capabilityLine() string {
	if len(s.opts.Without) == 0 {
		return ""
	}
	keep := slices.DeleteFunc(slices.Clone(capabilities), func(c string) bool {
		return slices.ContainsFunc(s.opts.Without, func(w string) bool { return strings.EqualFold(w, c) })
	})
	return "protocol imap {\n  imap_capability = " + strings.Join(keep, " ") + "\n}\n"
}
