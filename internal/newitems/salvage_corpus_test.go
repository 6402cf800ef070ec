package newitems

import (
	"bytes"
	"encoding/xml"
	"regexp"
	"slices"
	"testing"
)

var (
	// itemStartRe matches an item or entry start tag, with or without a prefix.
	itemStartRe = regexp.MustCompile(`<(?:[A-Za-z_][\w.-]*:)?(?:item|entry)[\s/>]`)
	// textMarkupRe matches CDATA sections and comments, where markup is text.
	textMarkupRe = regexp.MustCompile(`(?s)<!\[CDATA\[.*?\]\]>|<!--.*?-->`)
)

// corpusDocs returns the corpus documents decoded to UTF-8 (with the feed
// URL Parse is given), skipping those Decode rejects.
func corpusDocs(t *testing.T) (paths []string, docs [][]byte, urls []string) {
	for _, cf := range loadCorpus(t, "feedparser/tests", "feedvalidator/testcases", "jsonfeed") {
		doc, err := Decode(cf.body, cf.contentType)
		if err != nil {
			continue
		}
		u := cf.location
		if u == "" {
			u = "http://corpus.example/" + cf.path
		}
		paths, docs, urls = append(paths, cf.path), append(docs, doc), append(urls, u)
	}
	return paths, docs, urls
}

// TestCorpusUnseenItems finds the corpus documents that parse, hold item or
// entry start tags outside CDATA and comments (counted by a regular
// expression, not by the scan Parse uses) and give no items: each must carry
// a WarnItemsUnseen warning; documents that give no items and hold no such
// tags must carry none.
func TestCorpusUnseenItems(t *testing.T) {
	paths, docs, urls := corpusDocs(t)
	var zero, warned, empty int
	for i, doc := range docs {
		f, err := Parse(doc, "", urls[i])
		if err != nil || f.ItemsSeen > 0 || isJSON(doc) {
			continue
		}
		zero++
		tags := len(itemStartRe.FindAll(textMarkupRe.ReplaceAll(doc, nil), -1))
		switch {
		case tags == 0:
			empty++
			if f.Warning != nil {
				t.Errorf("%s: no item markup, yet warning %q", paths[i], f.Warning.Text)
			}
		case f.Warning == nil || f.Warning.Kind != WarnItemsUnseen:
			t.Errorf("%s: %d item start tags, 0 items, no warning", paths[i], tags)
		default:
			warned++
			t.Logf("%s: %d tags: %s", paths[i], tags, f.Warning.Text)
		}
	}
	t.Logf("documents parsed to 0 items: %d; with item markup (warned): %d; without item markup: %d", zero, warned, empty)
	if zero == 0 {
		t.Error("no document of the corpus parsed to 0 items; the test looks at nothing")
	}
}

// itemSpan is where one item-level item sits in a document.
type itemSpan struct{ start, end int }

// corpusItemSpans lists the byte spans of the items of doc at item level
// (under the root, or under the root's <channel>), with a tokenizer set up
// like the feed parser's. ok is false when doc does not tokenize to the end.
func corpusItemSpans(doc []byte) (spans []itemSpan, ok bool) {
	d := newScanDecoder(doc)
	var names []string
	var prev int64
	open := -1
	for {
		tok, err := d.Token()
		if err != nil {
			return spans, err.Error() == "EOF"
		}
		off := d.InputOffset()
		switch t := tok.(type) {
		case xml.StartElement:
			lvl := len(names) == 1 || (len(names) == 2 && names[1] == "channel")
			if (t.Name.Local == "item" || t.Name.Local == "entry") && lvl {
				open = int(prev)
			}
			names = append(names, t.Name.Local)
		case xml.EndElement:
			names = names[:len(names)-1]
			lvl := len(names) == 1 || (len(names) == 2 && names[1] == "channel")
			if (t.Name.Local == "item" || t.Name.Local == "entry") && lvl && open >= 0 {
				spans = append(spans, itemSpan{open, int(off)})
				open = -1
			}
		}
		prev = off
	}
}

// TestCorpusTruncation cuts every sound XML feed of the corpus with at least
// two items (all distinct, none beyond MaxItems) in the middle of each of
// its last three items and right after each of their end tags, and checks
// that Parse returns exactly the items completed before the cut, equal to
// the full parse's (identity, title, link, content), never the item cut
// short; and that a cut before the first complete item stays an error.
func TestCorpusTruncation(t *testing.T) {
	paths, docs, urls := corpusDocs(t)
	var nDocs, points, recovered, halfItems, errPoints, skipped, salvaged int
	for i, doc := range docs {
		full, err := Parse(doc, "", urls[i])
		if err == nil && full.Warning != nil && full.Warning.Kind == WarnTruncated {
			salvaged++ // the corpus's own truncated documents
			t.Logf("%s as it is: %s", paths[i], full.Warning.Text)
		}
		if err != nil || isJSON(doc) || full.Warning != nil || full.ItemsSeen < 2 || full.ItemsSeen != len(full.Items) {
			continue
		}
		spans, ok := corpusItemSpans(doc)
		if !ok || len(spans) != full.ItemsSeen {
			skipped++
			continue
		}
		nDocs++
		var cuts []int
		for _, sp := range spans[max(0, len(spans)-3):] {
			cuts = append(cuts, sp.start+(sp.end-sp.start)/2, sp.end)
		}
		for _, cut := range cuts {
			points++
			complete := 0
			for _, sp := range spans {
				if sp.end <= cut {
					complete++
				}
			}
			got, err := Parse(bytes.Clone(doc[:cut]), "", urls[i])
			if complete == 0 {
				errPoints++
				if err == nil {
					t.Errorf("%s cut at %d: no complete item, yet %d items", paths[i], cut, len(got.Items))
				}
				continue
			}
			if err != nil {
				t.Errorf("%s cut at %d (%d complete items): %v", paths[i], cut, complete, err)
				continue
			}
			if got.Warning == nil || got.Warning.Kind != WarnTruncated || got.Warning.ItemMarkup != complete {
				t.Errorf("%s cut at %d: warning %+v, want WarnTruncated with %d items", paths[i], cut, got.Warning, complete)
			}
			if len(got.Items) > complete {
				halfItems += len(got.Items) - complete
			}
			if len(got.Items) != complete {
				t.Errorf("%s cut at %d: %d items, want the %d complete ones", paths[i], cut, len(got.Items), complete)
				continue
			}
			want := full.Items[:complete]
			if !slices.EqualFunc(got.Items, want, func(a, b Item) bool {
				return a.Identity == b.Identity && a.Title == b.Title && a.Link == b.Link && a.ContentHTML == b.ContentHTML
			}) {
				t.Errorf("%s cut at %d: items differ from the full parse's first %d", paths[i], cut, complete)
				continue
			}
			recovered += complete
		}
	}
	t.Logf("%d documents truncated at %d points, %d items recovered, %d half items; %d points before any complete item (errors, as they should be); %d documents skipped (items not all at item level)",
		nDocs, points, recovered, halfItems, errPoints, skipped)
	t.Logf("%d corpus documents salvaged as they are", salvaged)
	if nDocs < 40 { // 45 when this was written
		t.Errorf("only %d documents truncated", nDocs)
	}
}
