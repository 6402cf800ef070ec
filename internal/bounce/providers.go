package bounce

import (
	"regexp"
	"strconv"
	"strings"
)

// Some mailbox providers put a code of their own in the reply, documented
// on their postmaster pages, that says more than the enhanced status:
// Cox and Spectrum ("AUP#CDRBL", "AUP#In-1310"), Orange and La Poste
// ("OFR_506", "LPN007_416").

// coxCodes are Cox's AUP codes.
var coxCodes = map[string]Reason{
	"CXBL": Blocked, "CDRBL": Blocked, "CXDNS": Blocked, // blocklist, RBL, no PTR
	"CXSNDR": Authentication, "CXTHRT": Authentication, "CXMJ": Authentication,
	"CXSMTP": SenderRejected,
	"CXCNCT": RateLimited, "CXMXRT": RateLimited,
}

// spectrumCodes are Spectrum's AUP#In-NNNN ranges: [first, last] → reason.
var spectrumCodes = []struct {
	first, last int
	reason      Reason
}{
	{1000, 1000, Blocked}, {1010, 1080, SenderRejected}, {1090, 1090, Temporary},
	{1100, 1150, Blocked}, {1160, 1190, Policy}, {1200, 1250, Blocked}, {1260, 1260, Temporary},
	{1300, 1490, RateLimited}, {1500, 1520, SenderRejected}, {1530, 1530, TooLarge},
	{1540, 1550, RateLimited}, {1560, 1560, Policy}, {1580, 1580, RateLimited},
}

var aupRe = regexp.MustCompile(`(?i)\baup#(in-)?([a-z0-9]+)`)

// orangeCodes are the last three digits of Orange's and La Poste's codes;
// the "please try later" ones are left to the wording.
var orangeCodes = map[string]Reason{
	"101": Blocked, "102": Blocked, "103": Blocked, "104": RateLimited,
	"305": Authentication, "401": Authentication, "402": Authentication, "517": Authentication,
	"403": SenderRejected, "405": SenderRejected, "415": SenderRejected, "421": SenderRejected,
	"416": UnknownUser, "417": MailboxFull, "420": NotAccepting, "426": NotAccepting,
	"505": Temporary, "506": Policy, "510": Blocked, "514": TooLarge, "630": Policy, "999": Blocked,
}

var orangeRe = regexp.MustCompile(`(?i)\b(?:ofr|lpn|ouk)[0-9]*_([0-9]{3})\b`)

// fromProviderCode returns the reason of a provider's own code in text.
func fromProviderCode(text string) (Reason, bool) {
	if m := orangeRe.FindStringSubmatch(text); m != nil && orangeCodes[m[1]] != "" {
		return orangeCodes[m[1]], true
	}
	m := aupRe.FindStringSubmatch(text)
	if m == nil {
		return "", false
	}
	code := strings.ToUpper(m[2])
	if m[1] != "" {
		n, err := strconv.Atoi(code)
		if err != nil {
			return "", false
		}
		for _, c := range spectrumCodes {
			if n >= c.first && n <= c.last {
				return c.reason, true
			}
		}
		return "", false
	}
	switch {
	case coxCodes[code] != "":
		return coxCodes[code], true
	case strings.HasPrefix(code, "IPBL"):
		return Blocked, true
	case strings.HasPrefix(code, "URLBL"):
		return Policy, true
	}
	return "", false
}
