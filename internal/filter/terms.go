package filter

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// Limits of a list of terms.
const (
	MaxTerms   = 50  // terms in one list
	MaxTermLen = 200 // characters in one term
)

// term is one parsed term: the folded words of a word or phrase, or a
// compiled regular expression.
type term struct {
	src   string // as written, trimmed
	words []string
	re    *regexp.Regexp
}

// Terms is a parsed list of terms; the zero value is the empty list.
type Terms struct {
	list []term
}

// Parse reads a comma-separated list of terms (see the package comment).
// Empty terms (",,", a trailing comma) are skipped. The error is one line
// naming the bad term: an invalid regular expression, a term without a
// letter or digit, or a list or term over the limits.
func Parse(s string) (Terms, error) {
	var t Terms
	rest := strings.TrimSpace(s)
	for rest != "" {
		var src string
		src, rest = nextTerm(rest)
		if src == "" {
			continue
		}
		if n := utf8.RuneCountInString(src); n > MaxTermLen {
			return Terms{}, fmt.Errorf("term %q is %d characters long (at most %d)", abbrev(src), n, MaxTermLen)
		}
		if len(t.list) == MaxTerms {
			return Terms{}, fmt.Errorf("more than %d terms", MaxTerms)
		}
		tm, err := parseTerm(src)
		if err != nil {
			return Terms{}, err
		}
		t.list = append(t.list, tm)
	}
	return t, nil
}

// nextTerm splits off the first term of s: up to the next comma, or for a
// regular expression up to the first "/" followed by a comma or the end.
// It returns the term trimmed and what follows its comma.
func nextTerm(s string) (string, string) {
	s = strings.TrimLeft(s, " \t\r\n")
	if strings.HasPrefix(s, "/") {
		for i := 1; i < len(s); i++ {
			if s[i] != '/' {
				continue
			}
			after := strings.TrimLeft(s[i+1:], " \t\r\n")
			if after == "" {
				return s[:i+1], ""
			}
			if after[0] == ',' {
				return s[:i+1], after[1:]
			}
		}
	}
	if i := strings.IndexByte(s, ','); i >= 0 {
		return strings.TrimSpace(s[:i]), s[i+1:]
	}
	return strings.TrimSpace(s), ""
}

// parseTerm compiles one non-empty term.
func parseTerm(src string) (term, error) {
	if len(src) >= 2 && src[0] == '/' && src[len(src)-1] == '/' {
		expr := src[1 : len(src)-1]
		if expr == "" {
			return term{}, fmt.Errorf("empty regular expression %s", src)
		}
		re, err := regexp.Compile("(?i)" + expr)
		if err != nil {
			return term{}, fmt.Errorf("invalid regular expression %s: %s", src, reasonOf(err))
		}
		return term{src: src, re: re}, nil
	}
	words := splitWords(fold(src))
	if len(words) == 0 {
		return term{}, fmt.Errorf("term %q has no letter or digit", src)
	}
	return term{src: src, words: words}, nil
}

// reasonOf is a regexp error without the expression it repeats
// ("missing closing )").
func reasonOf(err error) string {
	var se *syntax.Error
	if errors.As(err, &se) {
		return string(se.Code)
	}
	return err.Error()
}

// abbrev shortens a long term for an error message.
func abbrev(s string) string {
	if utf8.RuneCountInString(s) <= 40 {
		return s
	}
	r := []rune(s)
	return string(r[:40]) + "…"
}

// Empty reports whether the list has no term.
func (t Terms) Empty() bool { return len(t.list) == 0 }

// Len is the number of terms.
func (t Terms) Len() int { return len(t.list) }

// String is the canonical form of the list: the terms as written, trimmed,
// joined by ", "; it parses back to the same list.
func (t Terms) String() string {
	parts := make([]string, len(t.list))
	for i, tm := range t.list {
		parts[i] = tm.src
	}
	return strings.Join(parts, ", ")
}
