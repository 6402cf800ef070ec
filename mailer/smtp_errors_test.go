package mailer

import (
	"testing"

	"github.com/wneessen/go-mail"
)

func TestClassifyReply(t *testing.T) {
	tests := []struct {
		name      string
		reason    mail.SendErrReason
		code      int
		delivered bool
		want      replyVerdict
	}{
		{"5xx at RCPT TO fails, keeps conn", mail.ErrSMTPRcptTo, 550, false, replyVerdict{keepConn: true}},
		{"5xx at end of DATA fails", mail.ErrSMTPDataClose, 554, false, replyVerdict{keepConn: true}},
		{"4xx at RCPT TO retries, keeps conn", mail.ErrSMTPRcptTo, 450, false, replyVerdict{temporary: true, keepConn: true}},
		{"4xx at MAIL FROM retries", mail.ErrSMTPMailFrom, 451, false, replyVerdict{temporary: true, keepConn: true}},
		{"421 retries, drops conn", mail.ErrSMTPMailFrom, 421, false, replyVerdict{temporary: true}},
		{"no reply at MAIL FROM: safe to resend", mail.ErrSMTPMailFrom, 0, false, replyVerdict{temporary: true, safeRetry: true}},
		{"no reply at end of DATA: not safe", mail.ErrSMTPDataClose, 0, false, replyVerdict{temporary: true}},
		{"dead conn on probe: safe to resend", mail.ErrConnCheck, 0, false, replyVerdict{temporary: true, safeRetry: true}},
		{"bad sender is permanent", mail.ErrGetSender, 0, false, replyVerdict{keepConn: true}},
		{"bad recipients are permanent", mail.ErrGetRcpts, 0, false, replyVerdict{keepConn: true}},
		{"8-bit body refused is permanent", mail.ErrNoUnencoded, 0, false, replyVerdict{keepConn: true}},
		{"RSET failed after delivery", mail.ErrSMTPReset, 0, true, replyVerdict{delivered: true}},
		{"RSET failed before delivery", mail.ErrSMTPReset, 0, false, replyVerdict{temporary: true}},
		{"RSET 5xx before delivery", mail.ErrSMTPReset, 554, false, replyVerdict{keepConn: true}},
	}
	for _, tc := range tests {
		if got := classifyReply(tc.reason, tc.code, tc.delivered); got != tc.want {
			t.Errorf("%s: classifyReply(%v, %d, %v) = %+v, want %+v", tc.name, tc.reason, tc.code, tc.delivered, got, tc.want)
		}
	}
}
