package bounce

import "regexp"

// pattern is one family of wordings that names a cause without (or
// despite) a code.
type pattern struct {
	re     *regexp.Regexp
	reason Reason
}

func p(reason Reason, re string) pattern {
	return pattern{regexp.MustCompile(re), reason}
}

// patterns are tried in order on the lower-cased text; the first match
// wins. The order is the judgement: precise wordings that would otherwise
// be caught by a broader family come first (Microsoft's "Recipient address
// rejected: Access denied" is an unknown user, a "recipient account is
// blocked" is not a blocklist), then the sender's own problems (a
// "blocked using Spamhaus" is about the sender even when the reply says
// "recipient rejected"), then the reader's address, then the transient.
// patterns_test.go has a sample of each family.
var patterns = []pattern{
	// Precise wordings first.
	p(UnknownDomain, `host or domain name not found|host not found|dns lookup failure|account or domain may not exist`),
	p(Temporary, `pipe to \|`),
	p(TooLarge, `line limit exceeded`),
	p(Blocked, `relay access denied|open relay|invalid ip for sending|after (initial connection|ehlo|helo)[^\n]*:\s*(host [^\n]*:\s*)?5[0-9][0-9]`),
	// Japanese carriers (au/KDDI, ezweb) answer a reader's domain filter
	// with an empty address before "User unknown".
	p(Filtered, `\b550:? : user unknown`),
	p(Syntax, `malformed (recipient )?address|syntax error`),
	p(Filtered, `refused due to recipient preferences`),
	p(UnknownUser, `recipient address rejected: access denied|recipientnotfound|recipient not found|not listed in (the )?(domino directory|public name|.*address book)|invalid final delivery userid|the recipient name is not recognized|no valid recipients for this|no mailbox here by that name|the email account that you tried to reach does not exist`),
	p(NotAccepting, `no (mx|mail exchanger|valid mx)( record)?( found)? for|no mx found|no mx record|couldn't find a mail exchanger|does not have any mx|mx (record )?not found|host does not accept mail|(recipient )?account is blocked|compte du destinataire est bloque|temporar(y|ily) locked|not accepting network messages|indicated no smtp service|null mx`),
	p(Temporary, `^procmail:|name service error|malformed or unexpected name server reply|dns error|dns type '?mx'? lookup|\bservfail\b`),
	p(Policy, `protocol violation|duplicate header|multiple addresses in from|not rfc ?5322 compliant|multiple (subject|from|date|to|message-id) headers|header error|headers too large|content presents|blacklisted url|url in (the )?message|\buribl\b|\bsurbl\b|policy reasons|spam classification|rejected due to spam|classified as spam`),
	p(RateLimited, `frequency limit|too many (messages|emails|mails|connections|recipients|concurrent|sessions|errors)`),
	// One reader's mailbox takes mail more slowly than it comes (Gmail's
	// 4.2.1, Microsoft's RecipientThresholdExceeded): that reader's limit,
	// not the sender's; before the rate limits below.
	p(RecipientBusy, `(user|recipient|mailbox) you are trying to contact is receiving mail at a rate|is receiving mail (at a rate|too quickly)|recipientthresholdexceeded|recipient'?s? (per hour )?message receive limit|receiving too many messages|recipient (is )?receiving (mail|messages) too fast`),
	// Gmail's verdict on one message's content: the message was blocked,
	// not our IP or domain.
	p(Policy, `likely unsolicited mail|unsolicitedmessageerror`),
	// The sender's own problems.
	p(Authentication, `smtp authentication|without authentication|\bdmarc\b|\bdkim\b|\bspf\b|sender policy framework|domain-?based message authentication|authentication (check|result)s? fail|authentication information|fails? to pass (the )?authentication|unauthenticated (email|mail|sender)|not authenticated|authrequired|authentication required|delivery not authori[sz]ed|sender is not authorized|is not allowed to send mail from|does not designate .* as permitted sender|message failed authentication|failed (the )?(sender )?authentication`),
	p(SenderRejected, `unroutable sender|sender (address|domain) (rejected|refused|denied|invalid|not allowed|must exist|not found|does not exist)|domain of sender address .* does not exist|sender rejected|email address is not verified|identities failed the check|customfromdenied|permission to post|not (allowed|authorized|permitted) to post|only members can post|are not (a )?member|not a member of|google groups|groups\.google\.com|投稿する権限|can't determine purported responsible address|purported responsible|access denied$|\.\.\. access denied|addresses rejected : access denied`),
	p(Blocked, `spamhaus|spamcop|barracuda ?(central|reputation|networks)|sorbs|\brbl\b|\bdnsbl\b|\bblacklist|\bblocklist|black list|block list|listed (at|in|on|by)\b|blocked using|blocked (by|due to|because)|has been blocked|is blocked|are blocked|blocked ip|ip (address )?(is |was )?(blocked|banned|rejected|listed)|poor reputation|bad reputation|low reputation|sender reputation|ip reputation|reputation (of|is)|user complaints|\bs3150\b|\bs3140\b|part of their network is on our block list|banned sending ip|unverifi?y?able sending ip|mismatches client ip|client host .*(rejected|blocked)|rejected because (of|your) (the )?ip|access denied\. ip|messages from [0-9.]+ weren't sent|too many unwanted messages|no ptr|ptr record|reverse (dns|lookup)|\bptr\b|rdns|hostname .*(does not|doesn't) resolve|cannot find your hostname|cannot resolve your (host|ip)|dynamic (ip|ips|address)|dial-?up|residential|generic (reverse|hostname)|use the smtp server of your isp|relay (access )?denied|relaying (denied|not (permitted|allowed))|not permitted to relay|not configured to relay|insecure mail relay|we do not relay|unable to relay|\bnorelay|your (domain|ip|host|server) (has been|is) (banned|blocked|rejected|blacklisted)|mail from .* (refused|rejected)|rejecting (mail|connections?) from|refused to talk to me|service unavailable[;,] client host|not accepting (mail|messages|email) from|not accepting connections|service refus|administrative prohibition|administratively denied|access denied|rejected by (the )?recipient (domain|server)'?s? (policy|administrator)`),
	p(RateLimited, `rate limit|rate-limit|ratelimit|sending rate|unusual rate|temporarily deferred due to|exceeded the (maximum )?(number|rate)|throttl|too fast|sending too much|connection limit|maximum (number of )?connections`),
	p(Policy, `\bspam\b|junk mail|unsolicited|bulk mail|spamassassin|content (filter|rejected|policy|violation)|message content|rejected (due to|because of) (its )?content|media error|(virus|malware|phishing|infected|trojan|worm)\b|security polic|message (was |is )?rejected for policy|policy (violation|reason|rejection|restrictions)|violates? (our|the) (policy|policies|terms)|denied by policy|not compliant|rfc ?5322|rfc ?2822|message headers? (is |are )?(invalid|malformed)|bare lf|bare linefeed|line too long|header (is )?(too long|missing|invalid)|missing (the )?(message-id|date|from)|prohibited (attachment|file|content)|attachment.*(not allowed|blocked|rejected)|suspicious|message (is )?(blocked|rejected) (by|due to)|forgery|fraud|host network not allowed`),
	// The reader's address.
	p(Moved, `has moved|address (has )?changed|no longer (valid|available|in use|at|with)|new address|forwarding address|user has moved`),
	p(NotAccepting, `(mailbox|account|user|address) (is |has been |was )?(disabled|deactivated|suspended|inactive|locked|closed|expired|terminated|frozen|on hold|not active)|inactive (account|user|mailbox)|disabled (account|user|mailbox)|suspended (account|user|mailbox)|account (has been )?(disabled|suspended|deleted|removed)|user\(s\) account is disabled|(domain|recipient|address) (does not|doesn't) accept (mail|email)|does not accept mail|not accepting (mail|messages|email)\b|mailbox (is )?(not active|inactive)|recipient .*(is )?(inactive|disabled)|this (account|mailbox) has been (disabled|discontinued)|(user|mailbox) (is )?(temporarily )?deactivated`),
	{mailboxFullRe, MailboxFull},
	p(TooLarge, `(message|mail|email)( size)? (is )?(too (large|big)|exceeds|exceeded (the )?(size|limit|maximum)|larger than)|too (large|big)|size (limit|exceeds|exceeded)|exceeds (the )?(maximum|size|message size)|message length exceeds|maximum (message )?size|message size|mail size`),
	p(Filtered, `you (are not|aren't) (allowed|authorized)|moderat|members only|filtered|filter rejected|domain-filter|rejected by (the )?(user|recipient)'?s? (filter|rules|settings)|recipient (has )?(blocked|rejected) (you|your|the sender)|blocked by (the )?recipient|this user doesn't accept|user (has )?(blocked|rejected)|refuses? to accept (mail|messages) from you|does not (wish|want) to receive|rejected by the recipient domain`),
	p(UnknownDomain, `host (or domain name )?not found|host unknown|unknown host|domain (not found|unknown|does not exist|doesn't exist|name not found|lookup failed|is not reachable)|unknown domain|no such domain|unrouteable address|unroutable|name or service not known|nxdomain|mx (record )?lookup failed|invalid domain|domain (is )?(invalid|not (valid|configured))|all relevant mx records point to non-existent hosts|illegal host|no route to host|bad destination system|(recipient|destination) domain .*(not|unknown)|domain .* (isn't|is not) in my list|le domaine \S* ?n['’ ]?existe pas|domaine (inconnu|inexistant)`),
	p(UnknownUser, `user unknown|unknown user|unknown (recipient|address|mailbox|account|local part|local-part|alias)|no such (user|mailbox|recipient|address|account|person|local user)|(user|mailbox|recipient|address|account|alias|addressee) (does not|doesn't|did not) exist|(user|mailbox|recipient|address|account) (not found|unknown|not known|not exist|is not valid|invalid)|user not exist|invalid (recipient|mailbox|user|address|account)|recipient (address )?(invalid|not (valid|found|recognized|listed))|not (a )?valid (recipient|mailbox|user|address)|(user|mailbox|recipient|address) (is )?not (listed|known|local|here|found)|doesn't have an? .* account|does not have an? .* account|mailbox unavailable|mailbox (not found|not available|does not exist)|unknown or illegal|recipnotfound|no mailbox|not our customer|no account|undeliverable address|address (lookup|verification) failed|bad recipient|bad destination mailbox|verify (failed|recipient)|unable to verify|recipient verification failed|addressee unknown|account does not exist|rcpt to .*(rejected|invalid)|not a known user|mailbox is not in this domain|we do not have anyone with that email|cannot find (recipient|the recipient|user)|nonexistent|non-existent|no such|invalid address|invalid user address|n['’ ]?existe (pas|plus)|(utilisateur|destinataire|adresse|compte|boîte aux lettres) (\S+ )?(inconnue?|inexistante?)`),
	// Nobody's in particular.
	p(Expired, `all hosts have been failing for a long time|failed \d+ attempts|after \d+ attempts|retry (time(out)?|timeout|period) (exceeded|expired)|retry time not reached|message expired|envelope expired|expired after|too long in (the )?queue|in the queue too long|could not be delivered (for|within) \d|delivery time expired|time (limit )?exceeded|giving up|gave up|message timed out|has been (in the queue|queued) for too long|delivery (attempts|expired)|maximum time|tried for \d|undelivered for \d|has not been delivered for|could not deliver for|was not delivered within|was aborted after`),
	p(Temporary, `connection (timed out|refused|reset|dropped|closed|lost)|timed? ?out|temporar(y|ily)|try again later|please retry|deferred|greylist|graylist|resources? (temporarily )?unavailable|system (error|busy|not available)|internal (system )?error|server (busy|error|unavailable)|service (is )?(currently |temporarily )?unavailable|local error|i/o error|network (is )?unreachable|host not reachable|network error|socket error|did not accept our requests to connect|tls (handshake|negotiation)|starttls|unable to connect|could not connect|can't connect|cannot connect|establish an smtp connection|lost connection|connection was dropped|mail system full|mail (transfer|delivery) agent error|mailer error|error in processing|transaction failed|protocol error|out of memory|loop(s)? (back|detected)|mail loop|routing loop|too many hops|hop count exceeded|duplicated message-id`),
	p(Undetermined, `\bon hold\b`),
}

// mailboxFullRe is a full mailbox or an exceeded quota, in the table
// above and in the rule that a final report whose retries ran out on a
// full mailbox is the mailbox's (judgeReason).
var mailboxFullRe = regexp.MustCompile(`mailbox (is )?full|mailbox (has )?exceeded|mailbox exceeds|(over|exceed|exceeded|exceeds|exceeding|reached) (the |his |her |their |its |your )?(storage |mailbox |disk |mail )?(quota|storage|allocation|limit of the mailbox)|over ?quota|quota (exceeded|full|exceed|reached)|boîte (aux lettres |mail )?(est )?pleine|quota (dépassé|atteint)|insufficient (system )?storage|mailbox size limit|out of storage|(disk|mailbox|account) (is )?(full|over)|not enough (disk )?space|no space left|mail ?box .*full|full mailbox|storage limit|storage space|mailfolder is full|user is over|messages in recipient's mailbox exceeded|一杯`)

// weakPatterns are wordings that point to a cause only when nothing more
// precise (a pattern above or a specific status code) does.
var weakPatterns = []pattern{
	p(UnknownUser, `recipient address rejected|address rejected|invalid recipient`),
}

// dataStageRe says the failure came after the recipient was accepted
// (at the end of DATA): an "unknown user" then is a filter's answer, not
// proof that the address is dead.
var dataStageRe = regexp.MustCompile(`(?i)in reply to end of\s+data|in reply to data\s+command|after end of\s+data|>>> data[ \t]*\r?\n[ \t]*<<< 5`)

// genericUnknownRe is the plain "no such user" wording that a filter
// answering at DATA uses too (see dataStageRe).
var genericUnknownRe = regexp.MustCompile(`(?i)user unknown|unknown user|no such user|user not exist`)

// connectRe is a failure to reach the receiving host at all: in a final
// report, the retries ran out (Expired).
var connectRe = regexp.MustCompile(`(?i)host not reachable|timed? ?out|connection (refused|reset|lost|dropped)|could not connect|unable to connect|can't connect|cannot connect|establish an smtp connection|did not accept our requests to connect|socket error|network (is )?unreachable|no route to host`)

// fromText returns the reason of the first pattern of list matching
// lower-cased text.
func fromText(list []pattern, text string) (Reason, bool) {
	if text == "" {
		return "", false
	}
	for _, pt := range list {
		if pt.re.MatchString(text) {
			return pt.reason, true
		}
	}
	return "", false
}
