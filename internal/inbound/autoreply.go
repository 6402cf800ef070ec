package inbound

import (
	"regexp"
	"strings"
)

// autoReplySubjectRe matches out-of-office and vacation subjects in the
// languages feedmail's readers commonly use.
var autoReplySubjectRe = regexp.MustCompile(`(?i)^(re:\s*)?(auto:|automatic reply|auto[- ]?reply|autoreply|auto[- ]?response|out of (the )?office|vacation|on vacation|abwesenheitsnotiz|automatische antwort|r[ée]ponse automatique|absence|respuesta autom[aá]tica|fuera de la oficina|risposta automatica|fuori ufficio|automatisch antwoord|afwezig|autosvar|automaattinen vastaus|resposta autom[aá]tica|odpowied[zź] automatyczna)`)

// classifyAutoReply recognises an automatic reply by its headers
// (Auto-Submitted other than "no", X-Autoreply, X-Autorespond, Precedence
// auto_reply) or, failing those, its subject. X-Auto-Response-Suppress is a
// request to others, not a marker, and is ignored.
func classifyAutoReply(m *message) (Report, bool) {
	h := m.root.header
	auto := firstWord(h.get("Auto-Submitted"))
	switch {
	case auto != "" && auto != "no",
		h.has("X-Autoreply"), h.has("X-Autorespond"), h.has("X-Autoresponder"),
		h.has("X-Auto-Reply"),
		strings.EqualFold(strings.TrimSpace(h.get("Precedence")), "auto_reply"),
		strings.EqualFold(strings.TrimSpace(h.get("X-Precedence")), "auto_reply"):
		return Report{Kind: KindAutoReply, Format: FormatAutoHeader, Action: auto}, true
	case autoReplySubjectRe.MatchString(m.subject()):
		return Report{Kind: KindAutoReply, Format: FormatAutoSubj}, true
	}
	return Report{}, false
}
