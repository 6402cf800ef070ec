package main

import (
	"context"
	"errors"
	"io"
	"strings"
	"time"

	"github.com/feedmail/feedmail/internal/outbox"
)

// inboundUsage says how an MTA calls `feedmail inbound`.
const inboundUsage = "[--recipient ADDRESS] < message"

// exTempFail is sysexits' EX_TEMPFAIL: the MTA keeps the message and tries
// again later.
const exTempFail = 75

// inboundTimeout bounds one message's handling, so a stuck database makes
// the MTA try again rather than wait forever.
const inboundTimeout = 2 * time.Minute

// cmdInbound handles one message an MTA pipes to it (Postfix pipe or an
// alias "|feedmail inbound", Exim, OpenSMTPD mda): a bounce, complaint,
// unsubscribe by email or anything else, and prints what it did as one
// JSON line (outbox.Outcome). It exits 0 for every message it handled or
// deliberately ignored, bad input included, and 75 when it could not
// reach the database, so the MTA retries and never bounces the bounce; a
// bad command line is 2, as for every command.
// The envelope recipient comes from --recipient, else the RECIPIENT or
// ORIGINAL_RECIPIENT the MTA sets, else the message's own headers.
func cmdInbound(ctx context.Context, a *app, args []string) error {
	fs := flags(a, "inbound")
	var recipients multiFlag
	fs.Var(&recipients, "recipient", "envelope recipient the MTA delivered to (repeatable)")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	for _, name := range []string{"ORIGINAL_RECIPIENT", "RECIPIENT"} {
		if v := strings.TrimSpace(a.getenv(name)); v != "" {
			recipients = append(recipients, v)
		}
	}
	// Whatever happens, read the message to its end: an MTA whose pipe
	// breaks may count the delivery as failed.
	defer func() { _, _ = io.Copy(io.Discard, a.stdin) }()
	if a.cfg.BounceAddress == "" {
		// Without it no return token can be read, and a genuine bounce
		// would be lost as "names no email of ours": the MTA keeps it.
		return errors.New("FEEDMAIL_BOUNCE_ADDRESS is not set in this environment: cannot match the message to an email; exit 75 so the MTA keeps it and tries again")
	}
	ctx, cancel := context.WithTimeout(ctx, inboundTimeout)
	defer cancel()
	s, err := a.openExistingStore(ctx)
	if err != nil {
		return err
	}
	r := outbox.Returns{Store: s, Links: a.links(), Clock: a.clock, Log: a.log, Metrics: a.metrics}
	out, err := r.Handle(ctx, a.stdin, recipients)
	if err != nil {
		return err
	}
	return a.printJSONLine(out)
}

// multiFlag is a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string { return strings.Join(*m, ",") }

func (m *multiFlag) Set(v string) error {
	*m = append(*m, v)
	return nil
}
