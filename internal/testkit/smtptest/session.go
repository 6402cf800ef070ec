package smtptest

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// session is one SMTP conversation: it applies the server's fault options
// at MAIL, RCPT and DATA and hands accepted messages to the server.
type session struct {
	s        *Server
	conn     *smtp.Conn
	fc       *faultConn
	authed   bool
	from     string
	to       []string
	accepted int
}

func (s *Server) newSession(c *smtp.Conn) (smtp.Session, error) {
	return &session{s: s, conn: c, fc: rawConn(c)}, nil
}

func (ss *session) AuthMechanisms() []string {
	if ss.s.opts.Username == "" {
		return nil
	}
	return []string{sasl.Plain}
}

func (ss *session) Auth(mech string) (sasl.Server, error) {
	if ss.s.opts.Username == "" || mech != sasl.Plain {
		return nil, smtp.ErrAuthUnknownMechanism
	}
	return sasl.NewPlainServer(func(identity, username, password string) error {
		if username != ss.s.opts.Username || password != ss.s.opts.Password {
			return smtp.ErrAuthFailed
		}
		ss.authed = true
		return nil
	}), nil
}

func (ss *session) Mail(from string, _ *smtp.MailOptions) error {
	if ss.s.opts.Username != "" && !ss.authed {
		return smtp.ErrAuthRequired
	}
	if n := ss.s.opts.Reply421After; n > 0 && ss.accepted >= n {
		if ss.fc != nil {
			ss.fc.hangUp.Store(true)
		}
		ss.s.count(func(st *Stats) { st.Rejected++; st.Replied421++ })
		return &smtp.SMTPError{Code: 421, EnhancedCode: smtp.EnhancedCode{4, 7, 0}, Message: "Too many messages in this session, closing connection"}
	}
	ss.from = from
	ss.to = ss.to[:0]
	return nil
}

func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	key := strings.ToLower(to)
	switch {
	case ss.s.tempFail[key]:
		ss.s.count(func(st *Stats) { st.Rejected++; st.TempFails++ })
		return &smtp.SMTPError{Code: 450, EnhancedCode: smtp.EnhancedCode{4, 2, 0}, Message: "Mailbox temporarily unavailable"}
	case ss.s.permFail[key]:
		ss.s.count(func(st *Stats) { st.Rejected++; st.PermFails++ })
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "No such user here"}
	}
	if f := ss.s.opts.RcptReply; f != nil {
		if r := f(to); r != nil {
			ss.s.count(func(st *Stats) { st.Rejected++; st.Refused++ })
			return r.smtpError()
		}
	}
	ss.to = append(ss.to, to)
	return nil
}

func (ss *session) anyRcpt(set map[string]bool) bool {
	for _, t := range ss.to {
		if set[strings.ToLower(t)] {
			return true
		}
	}
	return false
}

func (ss *session) Data(r io.Reader) error {
	if ss.anyRcpt(ss.s.drop) {
		buf := make([]byte, 64)
		_, _ = io.ReadFull(r, buf)
		ss.s.count(func(st *Stats) { st.Dropped++ })
		if ss.fc != nil {
			_ = ss.fc.Close()
		}
		return errors.New("connection dropped by smtptest")
	}
	raw, err := ss.readData(r)
	if err != nil {
		return err
	}
	if ss.anyRcpt(ss.s.stall) {
		ss.s.count(func(st *Stats) { st.Stalled++ })
		<-ss.s.done
		return &smtp.SMTPError{Code: 421, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "Shutting down"}
	}
	if err := ss.injectFault(raw); err != nil {
		return err
	}
	if ss.fc != nil && ss.fc.peerGone() {
		// A real server has queued the message by now and delivers it,
		// though its client never learns: counted as taken, with the
		// reply lost.
		ss.s.faultN.clientGone.Add(1)
		ss.s.observe(ss.from, ss.to, raw, true)
		_ = ss.fc.Close()
		return errors.New("the client hung up before the reply")
	}
	var m Message
	if !ss.s.opts.Discard {
		m = Message{From: ss.from, To: append([]string(nil), ss.to...), Session: ss.sessionID(), Raw: raw}
	}
	if ss.s.opts.BeforeAccept != nil {
		ss.s.opts.BeforeAccept()
	}
	ss.s.accept(m)
	ss.accepted++
	if ss.anyRcpt(ss.s.dropAfter) {
		ss.s.count(func(st *Stats) { st.DroppedAfterData++ })
		ss.s.observe(ss.from, ss.to, raw, true)
		if ss.fc != nil {
			_ = ss.fc.Close()
		}
		return errors.New("connection dropped by smtptest after the message")
	}
	ss.s.observe(ss.from, ss.to, raw, false)
	return nil
}

// readData reads the whole DATA up to and including the final dot; it
// returns nil bytes when nobody wants them (Discard without Observe).
func (ss *session) readData(r io.Reader) ([]byte, error) {
	if ss.s.opts.Discard && ss.s.opts.Observe == nil {
		_, err := io.Copy(io.Discard, r) // a pooled buffer: nothing kept
		return nil, err
	}
	return io.ReadAll(r)
}

// injectFault applies the random fault drawn for this message (Faults):
// it returns the error that answers or ends the session instead of 250,
// nil to accept.
func (ss *session) injectFault(raw []byte) error {
	kind, slow := ss.s.dice.roll()
	if slow {
		ss.s.slow()
	}
	switch kind {
	case faultDrop:
		ss.s.faultN.dropped.Add(1)
		ss.s.observe(ss.from, ss.to, raw, true)
		if ss.fc != nil {
			_ = ss.fc.Close()
		}
		return errors.New("connection dropped after the dot by smtptest")
	case faultTempFail:
		ss.s.faultN.tempFailed.Add(1)
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "Temporary failure, try again later"}
	}
	return nil
}

func (ss *session) sessionID() int {
	if ss.fc != nil {
		return ss.fc.id
	}
	return 0
}

func (ss *session) Reset() {
	ss.from = ""
	ss.to = ss.to[:0]
}

func (ss *session) Logout() error { return nil }

// slogAdapter feeds go-smtp's error log to slog at debug level.
type slogAdapter struct{ l *slog.Logger }

func (a slogAdapter) Printf(format string, v ...any) {
	a.l.Debug(fmt.Sprintf(format, v...), "component", "smtptest")
}

func (a slogAdapter) Println(v ...any) {
	a.l.Debug(strings.TrimSuffix(fmt.Sprintln(v...), "\n"), "component", "smtptest")
}
