package inbound

import (
	"strings"
)

// classifyComplaint recognises an RFC 5965 feedback report (wherever its
// message/feedback-report part sits) and Microsoft's older JMRP form: a
// copy of the original from staff@hotmail.com with X-HmXmrOriginalRecipient.
func classifyComplaint(m *message) (Report, bool) {
	if e := m.find("message/feedback-report"); e != nil {
		return arfReport(m, e), true
	}
	if rcpt, ok := oldJMRP(m); ok {
		return Report{
			Kind:      KindComplaint,
			Action:    "abuse",
			Recipient: rcpt,
			Format:    FormatJMRP,
		}, true
	}
	return Report{}, false
}

// arfReport reads the feedback-report fields. Feedback-Type not-spam and
// auth-failure (RFC 6591, an authentication failure report) are not
// complaints; every other type, and a missing one, is.
func arfReport(m *message, e *entity) Report {
	var f header
	for _, b := range fieldBlocks(string(e.body)) {
		f = append(f, b...)
	}
	ft := firstWord(f.get("Feedback-Type"))
	rep := Report{
		Kind:      KindComplaint,
		Action:    ft,
		Recipient: f.get("Original-Rcpt-To"),
		Format:    arfVariant(m, f),
	}
	if rep.Recipient == "" {
		rep.Recipient = f.get("Removal-Recipient")
	}
	if rep.Recipient == "" {
		for _, o := range m.originals {
			if v := o.get("X-HmXmrOriginalRecipient"); v != "" {
				rep.Recipient = v
				break
			}
			if v := o.get("To"); v != "" && rep.Recipient == "" {
				rep.Recipient = v
			}
		}
	}
	rep.Diagnostic = firstLine(m.text())
	switch ft {
	case "not-spam":
		rep.Kind, rep.Reason = KindUnknown, "not-spam feedback"
	case "auth-failure":
		rep.Kind, rep.Reason = KindUnknown, "auth-failure report"
	}
	return rep
}

// arfVariant names the feedback loop that sent a report, from its
// User-Agent, the report's sender and Microsoft's recipient header.
func arfVariant(m *message, f header) string {
	ua := strings.ToLower(f.get("User-Agent"))
	from := strings.ToLower(m.root.header.get("From"))
	switch {
	case strings.Contains(ua, "hotmail"), strings.Contains(ua, "microsoft"),
		strings.Contains(from, "@hotmail.com"), strings.Contains(from, "@outlook.com"),
		hasJMRPHeader(m):
		return FormatJMRP
	case strings.Contains(ua, "yahoo"), strings.Contains(from, "yahoo.com"):
		return FormatYahooCFL
	case strings.Contains(ua, "aol"), strings.Contains(from, "@aol.com"), strings.Contains(from, "aol.net"):
		return FormatAOL
	}
	return FormatARF
}

// hasJMRPHeader reports whether an original carries Microsoft's
// X-HmXmrOriginalRecipient header.
func hasJMRPHeader(m *message) bool {
	for _, o := range m.originals {
		if o.has("X-HmXmrOriginalRecipient") {
			return true
		}
	}
	return false
}

// oldJMRP recognises the pre-ARF Microsoft complaint: an original message
// (attached, or the whole body) sent by staff@hotmail.com, or one carrying
// X-HmXmrOriginalRecipient. It returns that recipient.
func oldJMRP(m *message) (string, bool) {
	if len(m.originals) == 0 {
		return "", false
	}
	from := strings.ToLower(m.root.header.get("From"))
	for _, o := range m.originals {
		if v := o.get("X-HmXmrOriginalRecipient"); v != "" {
			return v, true
		}
	}
	if strings.Contains(from, "staff@hotmail.com") {
		return "", true
	}
	return "", false
}

// firstLine returns the first non-blank line of s.
func firstLine(s string) string {
	for len(s) > 0 {
		var line string
		line, s, _ = strings.Cut(s, "\n")
		if t := strings.TrimSpace(line); t != "" {
			return t
		}
	}
	return ""
}
