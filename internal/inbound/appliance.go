package inbound

import (
	"regexp"
	"strings"

	"github.com/feedmail/feedmail/internal/bounce"
)

// applianceRe recognises the report of a filtering appliance or service
// in front of the receiver's mailbox system (McAfee, m-FILTER,
// SurfControl, MailFoundry, MXLogic), by the header it stamps on its
// reports or the host it reports from.
var applianceRe = regexp.MustCompile(`(?i)^x-nai-header:|^x-mailer:.*(m-filter|surfcontrol)|^x-sef-|^received:.*\(mailfoundry\)|^from:.*@[a-z0-9.-]*mxlogic\.net`)

// filterAppliance turns a plain "unknown user" reported by a filtering
// appliance into Filtered: such a gateway answers for addresses it was
// told about, and its refusal without an x.1.1 status is no proof that
// the reader's mailbox is gone, so it never counts against the reader.
func filterAppliance(rep *Report, h header) {
	if rep.Kind != KindBounce || rep.Cause != bounce.UnknownUser || strings.HasSuffix(rep.Status, ".1.1") {
		return // x.1.1 is the receiver's own word that the mailbox is gone
	}
	for _, f := range h {
		if applianceRe.MatchString(f.name + ": " + capped(f.value, 200)) {
			rep.Cause, rep.Party, rep.Severity = bounce.Filtered, bounce.Filtered.Party(), SeverityNone
			return
		}
	}
}
