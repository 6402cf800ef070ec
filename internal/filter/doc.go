// Package filter decides whether a post passes a subscription's include
// and exclude terms. It owns the terms' syntax (Parse), their canonical
// form (Terms.String) and the matching (Filter.Pass, Doc); it does no I/O
// and knows nothing of storage or email.
//
// Terms are comma-separated. A plain term is a word or a phrase, matched
// case-insensitively (Unicode case folding, so "STRASSE" matches
// "Straße") as whole words against the post's title and the text of its
// content (HTML reduced to text). A word is a run of letters, digits and
// combining marks; anything else separates words, so the phrase "open
// source" matches "Open Source", "open-source" and "open, source", but
// "source" does not match "sourcecode". Scripts written without spaces
// between words (Han, Hiragana, Katakana, Thai, Lao, Khmer, Myanmar) have
// no word boundaries to find: each of their characters counts as a word,
// which makes a term in them match as a substring.
//
// A term written /…/ is a regular expression (RE2 syntax, case-insensitive,
// linear time whatever the input) searched in the title and the text, one
// line each; it is not limited to whole words (write \b for that, which
// knows ASCII word characters only). A regular expression may contain
// commas: it ends at the first "/" followed by a comma or the end.
//
// A post passes when it matches one include term (when there are any) and
// no exclude term. Limits: MaxTerms terms a list, MaxTermLen characters a
// term, MaxText bytes of text searched.
package filter
