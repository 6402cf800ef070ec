package outbox

import "github.com/feedmail/feedmail/mailer"

// countCause counts one failed send on channel by its cause
// (feedmail_send_failures_total) and says so when its outcome is
// unknown: the whole message was handed over and no reply came, so the
// receiver may have it and the retry may deliver it twice (RFC 5321's
// window for duplicates).
func (o *Outbox) countCause(channel, cause string, f failure) {
	o.cfg.Metrics.CountSendFailure(channel, cause)
	if cause == mailer.CauseUnknownOutcome {
		o.cfg.Log.Warn("email outcome unknown: connection lost after the message was handed over; the receiver may have it, and the retry may deliver it twice",
			"outbox", f.j.row.ID, "kind", f.j.row.Kind, "to", f.j.row.Address, "err", f.cause)
	}
}
