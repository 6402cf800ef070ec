package filter

// Doc is a post made ready for matching, once for all the subscriptions
// that look at it.
type Doc struct {
	text  string   // title and content text, one line each, for regexps
	words []string // folded words of text
}

// NewDoc prepares a post: its title (HTML in it is reduced to text) and
// its content HTML, MaxText bytes of them at most.
func NewDoc(title, contentHTML string) Doc {
	t := htmlText(title, MaxText)
	text := t + "\n" + htmlText(contentHTML, max(MaxText-len(t), 0))
	return Doc{text: text, words: splitWords(fold(text))}
}

// Filter is a subscription's include and exclude terms.
type Filter struct {
	Include, Exclude Terms
}

// New parses include and exclude lists; the error names which list is
// wrong.
func New(include, exclude string) (Filter, error) {
	in, err := Parse(include)
	if err != nil {
		return Filter{}, err
	}
	ex, err := Parse(exclude)
	if err != nil {
		return Filter{}, err
	}
	return Filter{Include: in, Exclude: ex}, nil
}

// Active reports whether the filter can leave anything out.
func (f Filter) Active() bool { return !f.Include.Empty() || !f.Exclude.Empty() }

// Pass reports whether post d passes: it matches one include term (when
// there are any) and no exclude term.
func (f Filter) Pass(d Doc) bool {
	if !f.Include.Empty() && !f.Include.matchAny(d) {
		return false
	}
	return !f.Exclude.matchAny(d)
}

// matchAny reports whether one of the terms matches d.
func (t Terms) matchAny(d Doc) bool {
	for _, tm := range t.list {
		if tm.match(d) {
			return true
		}
	}
	return false
}

// match reports whether the term is found in d: the regexp anywhere, or
// the words in a row.
func (tm term) match(d Doc) bool {
	if tm.re != nil {
		return tm.re.MatchString(d.text)
	}
	n := len(tm.words)
	for i := 0; i+n <= len(d.words); i++ {
		if d.words[i] == tm.words[0] && equalWords(d.words[i+1:i+n], tm.words[1:]) {
			return true
		}
	}
	return false
}

// equalWords reports whether a and b hold the same words.
func equalWords(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
