package bounce

import "strings"

// statusReasons maps the enhanced status codes (RFC 3463 and the IANA
// registry) whose subject and detail name a cause on their own. Class is
// ignored: "x.1.1" is an unknown mailbox whether reported as 4 or 5.
// Codes missing here (x.0.0, x.7.1, ...) say too little: the text decides.
var statusReasons = map[string]Reason{
	"1.1":  UnknownUser,
	"1.2":  UnknownDomain,
	"1.3":  UnknownUser, // bad destination mailbox address syntax
	"1.4":  UnknownUser, // ambiguous destination mailbox
	"1.6":  Moved,
	"1.7":  SenderRejected, // bad sender's mailbox address syntax
	"1.8":  SenderRejected, // bad sender's system address
	"1.10": NotAccepting,
	"2.1":  NotAccepting, // mailbox disabled
	"2.2":  MailboxFull,
	"2.3":  TooLarge,
	"3.1":  Temporary, // mail system full
	"3.2":  Temporary,
	"3.4":  TooLarge,
	"3.5":  Temporary,
	"4.1":  Temporary,
	"4.2":  Temporary,
	"4.3":  Temporary,
	"4.4":  UnknownDomain,
	"4.5":  Temporary,
	"4.6":  Temporary,
	"4.7":  Expired,
	"5.0":  Syntax,
	"5.1":  Syntax,
	"5.2":  Syntax,
	"5.3":  Temporary, // too many recipients
	"5.4":  Syntax,
	"5.5":  Syntax,
	"6.0":  Policy,
	"6.1":  Policy,
	"6.2":  Policy,
	"6.3":  Policy,
	"6.4":  Policy,
	"6.5":  Policy,
	"6.6":  Policy,
	"6.7":  Policy,
	"6.8":  Policy,
	"6.9":  Policy,
	"6.10": Policy,
	"7.2":  Filtered, // mailing list expansion prohibited
	"7.3":  Authentication,
	"7.4":  Authentication,
	"7.5":  Authentication,
	"7.6":  Authentication,
	"7.7":  Authentication,
	"7.8":  Authentication,
	"7.9":  Authentication,
	"7.10": Authentication,
	"7.11": Authentication,
	"7.13": NotAccepting, // user account disabled
	"7.14": Authentication,
	"7.15": Authentication,
	"7.16": Authentication,
	"7.17": NotAccepting, // mailbox owner has changed
	"7.18": NotAccepting, // domain owner has changed
	"7.19": Authentication,
	"7.20": Authentication, // no passing DKIM signature
	"7.21": Authentication,
	"7.22": Authentication,
	"7.23": Authentication, // SPF validation failed
	"7.24": Authentication, // SPF validation error
	"7.25": Blocked,        // reverse DNS validation failed
	"7.26": Authentication, // multiple authentication checks failed
	"7.27": NotAccepting,   // a null MX (RFC 7505 says the sender's; MTAs use it for the recipient's)
	"7.28": RateLimited,    // mail flood detected
	"7.29": Authentication, // ARC validation failure
	"7.30": Authentication, // REQUIRETLS support required
}

// definitiveStatus returns the reason of a status code that beats any
// wording: the ones that name the sender's address or authentication,
// a PTR check, a move, a null MX.
func definitiveStatus(status string) (Reason, bool) {
	if status == "" {
		return "", false
	}
	_, rest, _ := strings.Cut(status, ".")
	switch rest {
	case "1.6", "1.7", "1.8", "7.23", "7.24", "7.25", "7.26":
		return fromStatus(status)
	}
	return "", false
}

// fromStatus returns the reason a specific enhanced status code names.
// A transient protocol status (4.5.x) is no syntax error of ours: the
// receiver says to try again.
func fromStatus(status string) (Reason, bool) {
	if status == "" {
		return "", false
	}
	class, rest, _ := strings.Cut(status, ".")
	r, ok := statusReasons[rest]
	if ok && r == Syntax && class == "4" {
		return Temporary, true
	}
	return r, ok
}

// fromCode returns the reason a basic SMTP reply code names on its own:
// only the few that do.
func fromCode(code int) (Reason, bool) {
	switch code {
	case 421, 450, 451, 454:
		return Temporary, true
	case 452:
		return MailboxFull, true
	case 552:
		return MailboxFull, true
	case 553:
		return UnknownUser, true
	case 551:
		return Moved, true
	case 556:
		return NotAccepting, true
	case 500, 501, 502, 503, 504:
		return Syntax, true
	}
	return "", false
}
