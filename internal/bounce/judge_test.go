package bounce

import (
	"strings"
	"testing"
)

// TestJudgeSamples: one wording or code per family, as the big mailbox
// providers, common MTAs, appliances and Japanese carriers write them,
// judged by cause and party.
func TestJudgeSamples(t *testing.T) {
	tests := []struct {
		name string
		f    Failure
		want Reason
	}{
		// The reader's address.
		{"Gmail no such account", Failure{Status: "5.1.1", Code: 550, Text: "The email account that you tried to reach does not exist. Please try double-checking the recipient's email address for typos"}, UnknownUser},
		{"Postfix local recipient table", Failure{Status: "5.1.1", Code: 550, Text: "<a@example.com>: Recipient address rejected: User unknown in local recipient table"}, UnknownUser},
		{"Microsoft access denied is directory-based", Failure{Status: "5.4.1", Code: 550, Text: "Recipient address rejected: Access denied. AS(201806281) [DB5EUR03FT012.eop-EUR03.prod.protection.outlook.com]"}, UnknownUser},
		{"Microsoft RecipientNotFound", Failure{Status: "5.1.10", Code: 550, Text: "RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup"}, UnknownUser},
		{"Yahoo no such account", Failure{Code: 554, Text: "delivery error: dd This user doesn't have a yahoo.com account (x@yahoo.com) [0]"}, UnknownUser},
		{"qmail no mailbox", Failure{Text: "Sorry, no mailbox here by that name. (#5.1.1)"}, UnknownUser},
		{"Lotus Domino", Failure{Text: "User some.name (a@example.jp) not listed in Domino Directory"}, UnknownUser},
		{"bare 550 mailbox unavailable", Failure{Code: 550, Text: "Requested action not taken: mailbox unavailable"}, UnknownUser},
		{"unknown domain", Failure{Status: "5.1.2", Code: 550, Text: "Host or domain name not found. Name service error for name=nowhere.example type=A: Host not found"}, UnknownDomain},
		{"Outlook domain not reachable", Failure{Status: "5.5.0", Code: 554, Text: "The mail could not be delivered to the recipient because the domain is not reachable."}, UnknownDomain},
		{"moved", Failure{Status: "5.1.6", Code: 551, Text: "User has moved; please try <new@example.org>"}, Moved},
		{"Gmail disabled account", Failure{Status: "5.2.1", Code: 550, Text: "The email account that you tried to reach is disabled."}, NotAccepting},
		{"La Poste account blocked is not a blocklist", Failure{Status: "5.5.0", Code: 550, Text: "Le compte du destinataire est bloque. The recipient account is blocked."}, NotAccepting},
		{"null MX", Failure{Status: "5.1.10", Code: 556, Text: "Domain does not accept mail (null MX)"}, NotAccepting},
		{"mailbox full", Failure{Status: "5.2.2", Code: 552, Text: "The email account that you tried to reach is over quota."}, MailboxFull},
		{"au mailbox full (Japanese)", Failure{Text: "送信先のメールボックスが一杯のため、送信できませんでした。"}, MailboxFull},
		{"qmail no mail exchanger", Failure{Text: "Sorry, I couldn't find a mail exchanger or IP address. (#5.4.4)"}, NotAccepting},
		{"a delay is not a size", Failure{Text: "A message is delayed for more than 4 hours for the following list of recipients", Delayed: true}, Undetermined},
		{"Dovecot mail quota, retries ran out", Failure{Status: "4.4.7", Text: "452 4.2.2 Mail quota exceeded", Final: true}, MailboxFull},
		{"Exim retries ran out on a full mailbox", Failure{Text: "retry timeout exceeded", Context: "a@example.net\n    retry timeout exceeded\n    (last error: 452 4.2.2 Mail quota exceeded)", Final: true}, MailboxFull},
		{"disk quota", Failure{Code: 452, Text: "<a@example.net>: recipient reached disk quota"}, MailboxFull},
		{"disk quota, retries ran out", Failure{Status: "4.4.7", Text: "recipient reached disk quota", Final: true}, MailboxFull},
		{"would exceed mailbox quota", Failure{Code: 552, Text: "Requested mail action aborted: would exceed mailbox quota"}, MailboxFull},
		{"would exceed mailbox quota, retries ran out", Failure{Status: "4.4.7", Text: "would exceed mailbox quota", Final: true}, MailboxFull},
		{"French mailbox full", Failure{Code: 552, Text: "La boîte aux lettres est pleine"}, MailboxFull},
		{"French unknown user", Failure{Code: 550, Text: "L'adresse a@example.fr n'existe pas"}, UnknownUser},
		{"French unknown user, typographic apostrophe", Failure{Code: 550, Text: "Ce compte n’existe pas"}, UnknownUser},
		{"French unknown user in a final report", Failure{Text: "Le destinataire n'existe pas", Final: true}, UnknownUser},
		{"French unknown domain", Failure{Code: 550, Text: "Le domaine example.fr n'existe pas"}, UnknownDomain},
		{"Gmail receiving rate is the reader's", Failure{Status: "4.2.1", Code: 450, Text: "The user you are trying to contact is receiving mail at a rate that prevents additional messages from being delivered. Please resend your message at a later time.", Delayed: true}, RecipientBusy},
		{"Gmail receiving rate in a final report", Failure{Status: "4.2.1", Text: "450-4.2.1 The user you are trying to contact is receiving mail at a rate that prevents additional messages from being delivered.", Final: true}, RecipientBusy},
		{"Microsoft recipient threshold", Failure{Status: "5.2.121", Code: 550, Text: "RecipientThresholdExceeded; Sender's per hour message limit to this recipient exceeded"}, RecipientBusy},
		{"too large", Failure{Status: "5.3.4", Code: 552, Text: "Message size exceeds fixed maximum message size"}, TooLarge},
		{"Facebook recipient preferences", Failure{Status: "5.7.1", Code: 550, Text: "RCP-P2 Refused due to recipient preferences; rejected by the recipient domain"}, Filtered},
		{"au domain filter", Failure{Code: 550, Text: "550 : User unknown"}, Filtered},
		{"unknown user at DATA is a filter", Failure{Code: 550, Text: "550 Unknown user a@example.net", Context: "(in reply to end of DATA command)"}, Filtered},
		{"5.1.1 at DATA is meant", Failure{Status: "5.1.1", Code: 550, Text: "550 5.1.1 <a@example.org>... User Unknown", Context: ">>> DATA\n<<< 550 5.1.1 User Unknown"}, UnknownUser},
		// The sender's own problems.
		{"Spamhaus", Failure{Status: "5.7.1", Code: 554, Text: "Service unavailable; Client host [192.0.2.1] blocked using zen.spamhaus.org"}, Blocked},
		{"Microsoft S3150", Failure{Status: "5.7.1", Code: 550, Text: "Unfortunately, messages from [192.0.2.1] weren't sent. Please contact your Internet service provider since part of their network is on our block list (S3150)."}, Blocked},
		{"blocklist says recipient rejected", Failure{Status: "5.1.1", Code: 550, Text: "Recipient rejected: 192.0.2.1 is listed at bl.spamcop.net"}, Blocked},
		{"Gmail PTR", Failure{Status: "5.7.25", Code: 550, Text: "The IP address sending this message does not have a PTR record setup"}, Blocked},
		{"Yahoo TSS04 complaints", Failure{Status: "4.7.0", Code: 421, Text: "[TSS04] Messages from 192.0.2.1 temporarily deferred due to unexpected volume or user complaints"}, Blocked},
		{"refused at the greeting", Failure{Code: 554, Context: "SMTP error from remote mail server after initial connection:\n    host mx.example.net [192.0.2.2]:\n    554 mx.example.net : you've reached your daily relay quota"}, Blocked},
		{"relay denied", Failure{Status: "5.7.1", Code: 554, Text: "<a@example.org>: Relay access denied"}, Blocked},
		{"Gmail DMARC", Failure{Status: "5.7.26", Code: 550, Text: "Unauthenticated email from example.com is not accepted due to domain's DMARC policy."}, Authentication},
		{"SPF fail", Failure{Status: "5.7.23", Code: 550, Text: "The message was rejected because of Sender Policy Framework violation"}, Authentication},
		{"Exchange auth required", Failure{Status: "5.7.1", Code: 550, Text: "RESOLVER.RST.AuthRequired; authentication required"}, Authentication},
		{"Gmail authentication information", Failure{Status: "5.7.1", Code: 550, Text: "This message does not have authentication information or fails to pass authentication checks (SPF or DKIM)."}, Authentication},
		{"spam content", Failure{Status: "5.7.1", Code: 554, Text: "Message rejected as spam by Content Filtering."}, Policy},
		{"Gmail likely unsolicited is content", Failure{Status: "5.7.1", Code: 550, Text: "[192.0.2.1] The message has been blocked because it is likely unsolicited mail. To reduce the amount of spam sent to Gmail, this message has been blocked. Please visit https://support.google.com/mail/?p=UnsolicitedMessageError for more information."}, Policy},
		{"Gmail RFC 5322", Failure{Status: "5.7.1", Code: 550, Text: "This message is not RFC 5322 compliant. There are multiple Subject headers."}, Policy},
		{"Orange OFR_506 is spam", Failure{Status: "5.2.0", Code: 550, Text: "Mail rejete. Mail rejected. OFR_506 [506]"}, Policy},
		{"La Poste LPN007_416 is an unknown user", Failure{Status: "5.5.0", Code: 550, Text: "Adresse destinataire invalide. Invalid recipient. LPN007_416"}, UnknownUser},
		{"Orange OFR005_505 is their system", Failure{Status: "4.2.0", Code: 421, Text: "Service refuse. Veuillez essayer plus tard. Service refused, please try later. OFR005_505 [505]"}, Temporary},
		{"virus", Failure{Status: "5.7.1", Code: 554, Text: "Message contains a virus (Eicar-Test-Signature)"}, Policy},
		{"Tencent frequency", Failure{Code: 550, Text: "Ip frequency limited [...] Blocked IP 192.0.2.22"}, RateLimited},
		{"Gmail rate", Failure{Status: "4.7.28", Code: 421, Text: "Our system has detected an unusual rate of unsolicited mail originating from your IP address."}, RateLimited},
		{"too many connections", Failure{Status: "4.7.0", Code: 421, Text: "Too many concurrent SMTP connections from this IP address; please try again later."}, RateLimited},
		{"SES unverified sender", Failure{Code: 554, Text: "Message rejected: Email address is not verified. The following identities failed the check"}, SenderRejected},
		{"Google Groups members only", Failure{Text: "You may not have permission to post messages to the group. Google Groups"}, SenderRejected},
		{"sender domain", Failure{Status: "5.1.8", Code: 553, Text: "Sender address rejected: Domain not found"}, SenderRejected},
		{"Cox AUP code", Failure{Status: "5.1.0", Code: 550, Text: "<bounce@example.com> sender rejected. Refer to Error Codes section at https://www.cox.com for more information. AUP#CDRBL"}, Blocked},
		{"Spectrum AUP code", Failure{Status: "5.1.0", Code: 550, Text: "<a@example.com> sender rejected. Please see https://www.spectrum.net/support for more information. AUP#In-1310"}, RateLimited},
		{"4.5.x is transient", Failure{Status: "4.5.0", Code: 451}, Temporary},
		{"syntax", Failure{Code: 501, Text: "Syntax error in parameters or arguments"}, Syntax},
		{"501 invalid domain is no dead mailbox", Failure{Code: 501, Text: "Invalid domain name"}, Syntax},
		// Nobody's in particular.
		{"greylisting", Failure{Status: "4.2.0", Code: 451, Text: "Greylisted, see https://postgrey.schweikert.ch/"}, Temporary},
		{"timeout while trying", Failure{Status: "4.4.1", Text: "connect to mx.example.org[192.0.2.9]:25: Connection timed out"}, Temporary},
		{"timeout, given up", Failure{Status: "4.4.1", Text: "connect to mx.example.org[192.0.2.9]:25: Connection timed out", Final: true}, Expired},
		{"DNS trouble in a final report", Failure{Status: "4.0.0", Text: "DNS Error: DNS type 'mx' lookup of example.jp responded with code SERVFAIL", Final: true}, Temporary},
		{"Exim retry timeout", Failure{Text: "retry timeout exceeded"}, Expired},
		{"Exim all hosts failing", Failure{Text: "all hosts have been failing for a long time and were last tried after this message arrived"}, Expired},
		{"IMail attempts", Failure{Text: "Delivery failed 20 attempts: a@example.com"}, Expired},
		{"Exim pipe failure", Failure{Text: "pipe to |/usr/local/bin/filter a@example.com: No such file or directory"}, Temporary},
		{"line limit", Failure{Code: 500, Text: "500 Line limit exceeded"}, TooLarge},
		{"DragonFly DNS", Failure{Text: "DNS lookup failure: host cx.example.org not found"}, UnknownDomain},
		{"Gmail quoting the other server", Failure{Text: "Google tried to deliver your message, but it was rejected by the recipient domain. The error that the other server returned was: 550 550 5.1.1 user unknown (UserSearch)"}, UnknownUser},
		{"open relay", Failure{Code: 501, Text: "<a@example.org>... no access from mail server [192.0.2.55] which is an open relay."}, Blocked},
		{"4.4.7", Failure{Status: "4.4.7"}, Expired},
		{"nothing", Failure{Code: 550, Text: "nope"}, Undetermined},
		{"a hint decides only when nothing else does", Failure{Text: "no reason given", Hint: MailboxFull}, MailboxFull},
		{"the text beats a hint", Failure{Text: "user unknown", Hint: MailboxFull}, UnknownUser},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Judge(tt.f)
			if v.Reason != tt.want {
				t.Fatalf("Judge(%+v) = %s, want %s", tt.f, v.Reason, tt.want)
			}
			if v.Party != tt.want.Party() || v.Severity != tt.want.Severity() {
				t.Errorf("party %s severity %q, want %s %q", v.Party, v.Severity, tt.want.Party(), tt.want.Severity())
			}
		})
	}
}

// TestEveryPatternHasASample: each family in the table is exercised by
// at least one sample above (so none is dead or untested).
func TestEveryPatternHasASample(t *testing.T) {
	samples := []string{}
	for _, f := range judgeSampleTexts() {
		samples = append(samples, strings.ToLower(f))
	}
	for i, pt := range append(append([]pattern{}, patterns...), weakPatterns...) {
		hit := false
		for _, s := range samples {
			if pt.re.MatchString(s) {
				hit = true
				break
			}
		}
		if !hit {
			t.Errorf("pattern %d (%s) matches no sample", i, pt.reason)
		}
	}
}

// judgeSampleTexts are the wordings of TestJudgeSamples plus a few that
// only the patterns' order needs.
func judgeSampleTexts() []string {
	return []string{
		"Host or domain name not found", "Relay access denied", "malformed recipient address",
		"550 : User unknown", "host does not accept mail", "DNS Error: lookup", "duplicate header 'DKIM-Signature'",
		"Ip frequency limited", "Unauthenticated email is not accepted due to domain's DMARC policy",
		"Email address is not verified", "blocked using zen.spamhaus.org", "rate limit exceeded",
		"Message rejected as spam", "User has moved", "account has been disabled", "mailbox is full",
		"Message size exceeds fixed maximum message size", "Refused due to recipient preferences; filtered",
		"no such domain", "user unknown", "retry timeout exceeded", "connection timed out", "on hold",
		"Recipient address rejected: Access denied", "Recipient address rejected",
		"pipe to |/usr/bin/x", "500 Line limit exceeded",
		"The user you are trying to contact is receiving mail at a rate", "it is likely unsolicited mail",
	}
}

// TestJudgeBoundsItsInput: a huge text is read only up to MaxText.
func TestJudgeBoundsItsInput(t *testing.T) {
	v := Judge(Failure{Code: 550, Text: strings.Repeat("x", 10*MaxText) + " user unknown"})
	if v.Reason != Undetermined {
		t.Errorf("a cause past MaxText was read: %s", v.Reason)
	}
}

// TestDelayedNeverHard: a delay warning is never a dead address.
func TestDelayedNeverHard(t *testing.T) {
	v := Judge(Failure{Status: "4.1.1", Text: "user unknown", Delayed: true})
	if v.Severity == Hard || v.Permanent {
		t.Errorf("delayed report judged %+v", v)
	}
}

// TestVocabulary: every reason has a party, sender-side reasons a fix.
func TestVocabulary(t *testing.T) {
	for _, r := range Reasons {
		if !r.Known() {
			t.Errorf("%s not known", r)
		}
		if r.Party() == PartySender && r.Fix() == "" {
			t.Errorf("sender-side %s has no fix", r)
		}
		if r.Party() != PartyReader && r.Severity() != None {
			t.Errorf("%s counts against the reader but is not the reader's", r)
		}
	}
}
