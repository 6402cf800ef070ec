package fetcher

// Wording is how a fetch failure is put into words, in the two places
// feedmail shows one.
type Wording struct {
	// Reason is the short, public description that starts a poll's reason
	// on the status page ("timeout: penalty 2 h (2nd consecutive error)").
	Reason string
	// Plain is a sentence for the person who typed the address (sign-up,
	// OPML import).
	Plain string
}

// Describe returns the wording of err's Kind (see KindOf); an error of no
// known kind is "fetch failed", "that address did not answer".
func Describe(err error) Wording { return DescribeKind(KindOf(err)) }

// DescribeKind is Describe for a Kind.
func DescribeKind(k Kind) Wording {
	switch k {
	case KindTimeout:
		return Wording{"timeout", "that address did not answer in time"}
	case KindDNS:
		return Wording{"DNS lookup failed", "that address did not answer (its name does not exist)"}
	case KindTLS:
		return Wording{"TLS error", "that address did not answer"}
	case KindConnection:
		return Wording{"connection failed", "that address did not answer"}
	case KindTooLarge:
		return Wording{"body too large", "that page is too large (over 10 MB)"}
	case KindTooManyRedirects:
		return Wording{"too many redirects", "that address redirects too many times"}
	case KindPrivateAddress:
		return Wording{"refused: private or local network address",
			"that address is on a private or local network, which this feedmail does not visit " +
				"(its operator can allow it with FEEDMAIL_ALLOW_PRIVATE_NETWORKS=1)"}
	case KindBadURL:
		return Wording{"bad URL", "that is not a web address feedmail can visit"}
	case KindBadEncoding:
		return Wording{"bad content encoding", "that address sent something that could not be decoded"}
	case KindCanceled:
		return Wording{"fetch failed", "the check was interrupted; please try again"}
	}
	return Wording{"fetch failed", "that address did not answer"}
}
