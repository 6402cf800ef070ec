package bounce

// Reason is why a delivery failed, from a fixed vocabulary.
type Reason string

// The vocabulary. The comment says whose problem each is.
const (
	UnknownUser    Reason = "unknown-user"    // reader: no such mailbox
	UnknownDomain  Reason = "unknown-domain"  // reader: the domain has no mail host
	Moved          Reason = "moved"           // reader: the address moved (5.1.6)
	NotAccepting   Reason = "not-accepting"   // reader: disabled, suspended; a domain with no MX or a null MX
	MailboxFull    Reason = "mailbox-full"    // reader: over quota (soft)
	TooLarge       Reason = "too-large"       // reader: the message exceeds their limit (soft)
	Filtered       Reason = "filtered"        // reader's own rules refused it (a group, a filter): not counted
	RecipientBusy  Reason = "recipient-busy"  // reader: their mailbox takes mail more slowly than it comes (a per-recipient limit): not counted
	Expired        Reason = "expired"         // nobody: retries ran out on the way
	Temporary      Reason = "temporary"       // nobody: network, DNS, the receiver's system error
	RateLimited    Reason = "rate-limited"    // sender: too many messages or connections
	Blocked        Reason = "blocked"         // sender: IP or domain reputation, blocklist, PTR
	SenderRejected Reason = "sender-rejected" // sender: this sender address refused (unverified, members-only group)
	Policy         Reason = "policy"          // sender: spam or content rejected, virus, policy
	Authentication Reason = "authentication"  // sender: SPF, DKIM or DMARC failed
	Syntax         Reason = "syntax"          // sender: the sending system's protocol error
	Undetermined   Reason = "undetermined"    // nobody: nothing says why
)

// Reasons lists the vocabulary in a stable order (for reports and docs).
var Reasons = []Reason{UnknownUser, UnknownDomain, Moved, NotAccepting, MailboxFull, TooLarge,
	Filtered, RecipientBusy, Expired, Temporary, RateLimited, Blocked, SenderRejected, Policy, Authentication, Syntax, Undetermined}

// Party is whose problem a failure is.
type Party string

// Parties.
const (
	PartyReader Party = "reader" // the recipient's address or mailbox
	PartySender Party = "sender" // this installation: its IP, domain, content or setup
	PartyNone   Party = "none"   // nobody in particular: transient, or unknown
)

// Severity is what a failure does to the reader's address state.
type Severity string

// Severities. Only reader's-address reasons have one.
const (
	Hard Severity = "hard" // counts toward marking the address bouncing
	Soft Severity = "soft" // counted and shown, never stops delivery
	None Severity = ""     // not counted against the reader
)

// Party returns whose problem r is.
func (r Reason) Party() Party {
	switch r {
	case UnknownUser, UnknownDomain, Moved, NotAccepting, MailboxFull, TooLarge, Filtered, RecipientBusy:
		return PartyReader
	case RateLimited, Blocked, SenderRejected, Policy, Authentication, Syntax:
		return PartySender
	}
	return PartyNone
}

// Severity returns what r counts toward the reader's address: hard for a
// dead address, soft for a full mailbox or a too-large message, none for
// everything else (the reader's filters included: their address works).
func (r Reason) Severity() Severity {
	switch r {
	case UnknownUser, UnknownDomain, Moved, NotAccepting:
		return Hard
	case MailboxFull, TooLarge:
		return Soft
	}
	return None
}

// Known reports whether r is in the vocabulary.
func (r Reason) Known() bool {
	for _, k := range Reasons {
		if k == r {
			return true
		}
	}
	return false
}

// Fix returns what an operator should check for a sender-side reason, ""
// for the others.
func (r Reason) Fix() string {
	switch r {
	case Blocked:
		return "check the sending IP and domain on public blocklists and with the provider's postmaster tools; request delisting; check the PTR record"
	case Authentication:
		return "check the SPF record, the DKIM key published for FEEDMAIL_DKIM_SELECTOR, and the DMARC policy of the From domain"
	case SenderRejected:
		return "the receiver refused the sender address: check that FEEDMAIL_FROM and FEEDMAIL_BOUNCE_ADDRESS are on a domain that exists, is verified with the relay, and may send; a members-only group refuses everyone else"
	case Policy:
		return "the receiver refused the content: check what the rejected emails carried and the complaint rate"
	case RateLimited:
		return "send to this domain more slowly (the rate in FEEDMAIL_SMTP_URL) and warm the sending IP up"
	case Syntax:
		return "the sending MTA spoke SMTP the receiver refused: check the relay's configuration"
	}
	return ""
}
