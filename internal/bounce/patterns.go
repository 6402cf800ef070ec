package bounce

import "regexp"

// pattern is one wording that names a cause without (or despite) a code.
type pattern struct {
	re     *regexp.Regexp
	reason Reason
}

func p(reason Reason, re string) pattern {
	return pattern{regexp.MustCompile(re), reason}
}

// patterns are tried in order on the lower-cased text; the first match
// wins. Sender-side wordings come first: "blocked using spamhaus" is
// about the sender even when the reply says "recipient rejected". Each
// line is a family of wordings seen in the bounces of big mailbox
// providers, common MTAs and appliances; patterns_test.go has a sample
// of each.
var patterns = []pattern{
	// Authentication of our own mail.
	p(Authentication, `\bdmarc\b|\bdkim\b|\bspf\b|sender policy framework|domain-?based message authentication|authentication (check|result)s? fail|unauthenticated (email|mail|sender)|not authenticated|5\.7\.2[0-6]|sender is not authorized|is not allowed to send mail from|does not designate .* as permitted sender|message failed authentication|failed (the )?(sender )?authentication`),
	// Reputation, blocklists, PTR: the sending host is refused.
	p(Blocked, `spamhaus|spamcop|barracuda ?(central|reputation|networks)|sorbs|\brbl\b|\bdnsbl\b|\bblacklist|\bblocklist|black list|block list|listed (at|in|on|by)\b|blocked using|blocked (by|due to|because)|has been blocked|is blocked|are blocked|ip (address )?(is |was )?(blocked|banned|rejected|listed)|poor reputation|bad reputation|low reputation|sender reputation|ip reputation|reputation (of|is)|\bs3150\b|\bs3140\b|part of their network is on our block list|banned sending ip|client host .*(rejected|blocked)|rejected because (of|your) (the )?ip|access denied\. ip|connection (refused|rejected) .*(ip|reputation)|no ptr|reverse (dns|lookup)|\bptr\b|rdns|hostname .*(does not|doesn't) resolve|cannot find your hostname|cannot resolve your (host|ip)|not listed in .*dns|dynamic (ip|ips|address)|dial-?up|residential|generic (reverse|hostname)|relay (access )?denied|relaying (denied|not (permitted|allowed))|not permitted to relay|we do not relay|unable to relay|\bnorelay|sender (address )?(rejected|denied|blocked|not allowed)|sender domain (must exist|rejected|not found|does not exist)|domain of sender address .* does not exist|your (domain|ip|host|server) (has been|is) (banned|blocked|rejected|blacklisted)|mail from .* (refused|rejected)|rejecting (mail|connections?) from|refused to talk to me|service unavailable[;,] client host|not accepting (mail|messages|email) from|administrative prohibition|administratively denied|access denied|rejected by (the )?recipient (domain|server)'?s? (policy|administrator)`),
	// Rate limits.
	p(RateLimited, `rate limit|rate-limit|ratelimit|too many (messages|emails|mails|connections|recipients|concurrent|sessions|errors)|sending rate|try again later.*(rate|volume)|unusual rate|temporarily deferred due to|receiving mail at a rate|exceeded the (maximum )?(number|rate)|throttl|\bspeed\b|too fast|sending too much|4\.7\.28|connection limit|maximum (number of )?connections`),
	// Content, spam, viruses, policy.
	p(Policy, `\bspam\b|spam content|junk mail|unsolicited|bulk mail|looks like spam|considered spam|detected as spam|spamassassin|content (filter|rejected|policy|violation)|message content|rejected (due to|because of) (its )?content|(virus|malware|phishing|infected|trojan|worm)\b|message (was |is )?rejected for policy|policy (violation|reason|rejection|restrictions)|violates? (our|the) (policy|policies|terms)|not compliant|rfc ?5322|rfc ?2822|message headers? (is |are )?(invalid|malformed)|bare lf|bare linefeed|line too long|header (is )?(too long|missing|invalid)|missing (the )?(message-id|date|from)|prohibited (attachment|file|content)|attachment.*(not allowed|blocked|rejected)|suspicious|url.*(blocked|blacklisted|listed)|message (is )?(blocked|rejected) (by|due to)|mail (appears|seems) to be|forgery|fraud`),
	// Addresses that are gone.
	p(Moved, `has moved|address (has )?changed|no longer (valid|available|in use|at|with)|new address|forwarding address|user has moved|5\.1\.6`),
	p(NotAccepting, `(mailbox|account|user|address) (is |has been |was )?(disabled|deactivated|suspended|inactive|locked|closed|expired|terminated|blocked|frozen|on hold|not active)|inactive (account|user|mailbox)|disabled (account|user|mailbox)|suspended (account|user|mailbox)|account (has been )?(disabled|suspended|deleted|removed)|(domain|recipient|address) (does not|doesn't) accept (mail|email)|does not accept mail|null mx|not accepting (mail|messages|email)(?: for)?\b|no mailbox here|mailbox (is )?(not active|inactive|unavailable for)|recipient .*(is )?(inactive|disabled)|this (account|mailbox) has been (disabled|discontinued)|(user|mailbox) (is )?(temporarily )?deactivated|mailbox (is )?locked`),
	p(MailboxFull, `mailbox (is )?full|mailbox (has )?exceeded|(over|exceeded?|exceeds|exceeding) (the |his |her |their |its )?(storage |mailbox |disk )?(quota|storage|allocation|limit of the mailbox)|over ?quota|quota (exceeded|full|exceed)|insufficient (system )?storage|mailbox size limit|out of storage|(disk|mailbox|account) (is )?(full|over)|not enough (disk )?space|no space left|mail ?box .*full|full mailbox|storage limit|storage space|mailfolder is full|user is over`),
	p(TooLarge, `(message|mail|email)( size)? (is |too |exceeds|exceeded|larger)|too (large|big)|size (limit|exceeds|exceeded)|exceeds (the )?(maximum|size|message size)|message length exceeds|maximum (message )?size|message size|mail size|5\.3\.4`),
	p(Filtered, `not (allowed|authorized|permitted) to (post|send to this|send messages? to)|you (are not|aren't) (allowed|authorized|a member)|only members can post|group .*(does not accept|only accepts)|moderat|members only|filtered|filter rejected|rejected by (the )?(user|recipient)'?s? (filter|rules|settings)|recipient (has )?(blocked|rejected) (you|your|the sender)|blocked by (the )?recipient|this user doesn't accept|user (has )?(blocked|rejected)|refuses? to accept (mail|messages) from you|does not (wish|want) to receive`),
	p(UnknownDomain, `host (or domain name )?not found|host unknown|unknown host|domain (not found|unknown|does not exist|doesn't exist|name not found|lookup failed)|unknown domain|no such domain|unrouteable address|unroutable|name or service not known|nxdomain|no (mx|mail exchanger|valid mx)|mx (record )?(not found|lookup failed)|invalid domain|domain (is )?(invalid|not (valid|configured))|all relevant mx records point to non-existent hosts|does not have any mx|illegal host|dns error|no route to host|bad destination (mailbox|system)|(recipient|destination) domain .*(not|unknown)|domain .* (isn't|is not) in my list`),
	p(UnknownUser, `user unknown|unknown user|unknown (recipient|address|mailbox|account|local part|local-part|alias)|no such (user|mailbox|recipient|address|account|person|local user)|(user|mailbox|recipient|address|account|alias|addressee) (does not|doesn't|did not) exist|(user|mailbox|recipient|address|account) (not found|unknown|not known|not exist|is not valid|invalid)|invalid (recipient|mailbox|user|address|account)|recipient (address )?(rejected|invalid|not (valid|found|recognized|listed))|not (a )?valid (recipient|mailbox|user|address)|(user|mailbox|recipient|address) (is )?not (listed|known|local|here|found)|doesn't have an? .* account|does not have an? .* account|mailbox unavailable|mailbox (not found|not available|does not exist)|unknown or illegal|recipnotfound|no mailbox|not our customer|no account|undeliverable address|address (lookup|verification) failed|bad recipient|verify (failed|recipient)|unable to verify|recipient verification failed|addressee unknown|account does not exist|rcpt to .*(rejected|invalid)|it is not a valid|the email account that you tried to reach does not exist|accounts? (is |are )?unknown|not a known user|mailbox is not in this domain|we do not have anyone with that email|cannot find (recipient|the recipient|user)|nonexistent|non-existent|user doesn't exist|no such|invalid address`),
	p(Expired, `retry (time(out)?|timeout|period) (exceeded|expired)|retry time not reached|message expired|expired after|too long in (the )?queue|could not be delivered (for|within) \d|delivery time expired|time (limit )?exceeded|giving up|gave up|message timed out|has been (in the queue|queued) for too long|delivery (attempts|expired)|maximum time|tried for \d|undelivered for \d|has not been delivered for|could not deliver for|was not delivered within`),
	p(Temporary, `connection (timed out|refused|reset|dropped|closed|lost)|timed? ?out|temporar(y|ily)|try again|please retry|deferred|greylist|graylist|resources? (temporarily )?unavailable|system (error|busy|not available)|server (busy|error|unavailable)|service (is )?(temporarily )?unavailable|local error|internal error|i/o error|network (is )?unreachable|tls (handshake|negotiation)|starttls|unable to connect|could not connect|can't connect|cannot connect|lost connection|connection was dropped|mail system full|mail (transfer|delivery) agent error|mailer error|error in processing|protocol error|out of memory|loop(s)? (back|detected)|mail loop|routing loop|too many hops|hop count exceeded`),
}

// fromText returns the reason of the first pattern matching lower-cased
// text.
func fromText(text string) (Reason, bool) {
	if text == "" {
		return "", false
	}
	for _, pt := range patterns {
		if pt.re.MatchString(text) {
			return pt.reason, true
		}
	}
	return "", false
}
