package mailer

import (
	"strings"
	"sync"
)

// A post's frame: its item templates executed once for all the readers of
// one post who see it alike (same byline, same feed links), with stand-in
// tokens where each reader's own strings go (address, account and
// unsubscribe links); each reader's body is then the frame with their
// strings put in, instead of a template execution of its own.
//
// That is exact only where the templates copy a reader's string into the
// output unchanged, so a frame is proven before use: the first reader's
// email is rendered both ways and the frame is kept only when the two are
// equal. A later reader uses it only when each of their strings is empty
// exactly when the proving reader's was (the templates test emptiness),
// has the same scheme, and is made of ASCII letters and digits (which no
// escaper of html/template changes) and of characters the proving
// reader's string showed to pass unchanged (html/template escapes byte by
// byte, but for a URL's '%', and non-ASCII ones are never taken as
// proven); anyone else
// is rendered in full, and when the frame filled with their strings
// gives the same, their characters are proven too (learn). A token found
// in the post itself makes the two differ: no frame then.

// Reader slots of a frame, in footerView.
const (
	slotTo = iota
	slotManage
	slotUnsubscribe
	nSlots
)

// slotTokens stand in for the reader's strings: letters only, which every
// escaper of html/template leaves as they are.
var slotTokens = [nSlots]string{"zqxfmslotazqx", "zqxfmslotbzqx", "zqxfmslotczqx"}

// frameKey is what the readers sharing a frame have in common: the post's
// byline in their time zone and their footer without their own strings.
type frameKey struct {
	byline string
	footer footerView
}

// frame is one proven (or refused) rendering with tokens. Its parts are
// read-only once made; mu guards what readers proved.
type frame struct {
	ok         bool // proven: the readers that fit use it
	html, text framePart

	mu    sync.Mutex
	proof [nSlots]slotProof
}

// slotProof is what the proving reader's string showed of one slot.
type slotProof struct {
	empty  bool
	scheme string    // up to the first ':' ("" without one)
	chars  [256]bool // bytes seen passing unchanged
}

// frames holds a post's frames; safe for concurrent use.
type frames struct {
	mu sync.Mutex
	m  map[frameKey]*frame
}

func (fs *frames) get(k frameKey) *frame {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.m[k]
}

func (fs *frames) put(k frameKey, f *frame) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.m == nil {
		fs.m = map[frameKey]*frame{}
	}
	if fs.m[k] == nil {
		fs.m[k] = f
	}
}

// readerSlots splits a view's footer into the frame's key and the
// reader's strings.
func readerSlots(v itemView) (frameKey, [nSlots]string) {
	f := v.Footer
	vals := [nSlots]string{f.To, f.ManageURL, f.UnsubscribeURL}
	f.To, f.ManageURL, f.UnsubscribeURL = "", "", ""
	return frameKey{byline: v.Byline, footer: f}, vals
}

// fits reports whether vals may be put into the frame (see above).
func (f *frame) fits(vals [nSlots]string) bool {
	if !f.ok {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, v := range vals {
		p := &f.proof[i]
		if (v == "") != p.empty || schemeOf(v) != p.scheme {
			return false
		}
		for j := 0; j < len(v); j++ {
			if !p.chars[v[j]] {
				return false
			}
		}
	}
	return true
}

// learn takes the characters of a reader rendered in full (wantHTML,
// wantText) as proven when the frame filled with their vals gives the
// same, so that later readers with them fit.
func (f *frame) learn(vals [nSlots]string, wantHTML, wantText string) {
	if !f.ok {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, v := range vals {
		if (v == "") != f.proof[i].empty || schemeOf(v) != f.proof[i].scheme {
			return
		}
	}
	if h, t := f.fill(vals); h != wantHTML || t != wantText {
		return
	}
	for i, v := range vals {
		f.proof[i].add(v)
	}
}

// fill returns the frame's parts with vals in place of the tokens.
func (f *frame) fill(vals [nSlots]string) (htmlPart, textPart string) {
	return f.html.fill(vals), f.text.fill(vals)
}

// framePart is one rendered part cut at its tokens: the text before each
// token and the token's slot, then the text after the last one.
type framePart struct {
	cuts []frameCut
	tail string
}

type frameCut struct {
	text string
	slot int
}

// cutFrame cuts s at every slot token.
func cutFrame(s string) framePart {
	var p framePart
	for {
		at, slot := -1, 0
		for i, tok := range slotTokens {
			if j := strings.Index(s, tok); j >= 0 && (at < 0 || j < at) {
				at, slot = j, i
			}
		}
		if at < 0 {
			p.tail = s
			return p
		}
		p.cuts = append(p.cuts, frameCut{text: s[:at], slot: slot})
		s = s[at+len(slotTokens[slot]):]
	}
}

// fill joins the part with vals in the slots.
func (p framePart) fill(vals [nSlots]string) string {
	n := len(p.tail)
	for _, c := range p.cuts {
		n += len(c.text) + len(vals[c.slot])
	}
	var b strings.Builder
	b.Grow(n)
	for _, c := range p.cuts {
		b.WriteString(c.text)
		b.WriteString(vals[c.slot])
	}
	b.WriteString(p.tail)
	return b.String()
}

// prove keeps the frame rendered with tokens (html, text) when, filled
// with the reader's vals, it equals their full rendering (wantHTML,
// wantText); it records what their strings showed.
func (f *frame) prove(vals [nSlots]string, wantHTML, wantText string) {
	gotHTML, gotText := f.fill(vals)
	if gotHTML != wantHTML || gotText != wantText {
		return
	}
	for i, v := range vals {
		p := &f.proof[i]
		p.empty, p.scheme = v == "", schemeOf(v)
		for _, r := range [][2]byte{{'a', 'z'}, {'A', 'Z'}, {'0', '9'}} {
			for c := r[0]; c <= r[1]; c++ {
				p.chars[c] = true // no escaper of html/template changes them
			}
		}
		p.add(v)
	}
	f.ok = true
}

// add takes v's ASCII characters as proven, but '%': a URL's '%' passes
// or not by what follows it, and the bytes of other characters may make
// up one that an escaper changes (U+2028 in a script).
func (p *slotProof) add(v string) {
	for j := 0; j < len(v); j++ {
		if v[j] < 0x80 && v[j] != '%' {
			p.chars[v[j]] = true
		}
	}
}

// schemeOf is s up to its first ':', or "".
func schemeOf(s string) string {
	if i := strings.IndexByte(s, ':'); i >= 0 {
		return s[:i]
	}
	return ""
}

// withTokens is v with the slot tokens for the reader's non-empty strings
// (an empty one stays empty: the templates test it).
func withTokens(v itemView, vals [nSlots]string) itemView {
	tok := func(i int) string {
		if vals[i] == "" {
			return ""
		}
		return slotTokens[i]
	}
	v.Footer.To, v.Footer.ManageURL, v.Footer.UnsubscribeURL = tok(slotTo), tok(slotManage), tok(slotUnsubscribe)
	return v
}

// body renders the item templates for view v of post p: from p's frame
// when one is proven and v's reader fits it, else in full (proving a new
// frame for the first reader of its kind).
func (p *ItemPost) body(tpl *Templates, v itemView) (htmlPart, textPart string, err error) {
	key, vals := readerSlots(v)
	f := p.frames.get(key)
	if f != nil && f.fits(vals) {
		h, t := f.fill(vals)
		return h, t, nil
	}
	htmlPart, textPart, err = tpl.render("item", v, len(p.content.HTML), len(p.content.Text))
	p.executions.Add(1)
	if err != nil {
		return "", "", err
	}
	if f != nil {
		f.learn(vals, htmlPart, textPart)
		return htmlPart, textPart, nil
	}
	nf := &frame{}
	if h, t, err := tpl.render("item", withTokens(v, vals), len(p.content.HTML), len(p.content.Text)); err == nil {
		p.executions.Add(1)
		nf.html, nf.text = cutFrame(h), cutFrame(t)
		nf.prove(vals, htmlPart, textPart)
	}
	p.frames.put(key, nf)
	return htmlPart, textPart, nil
}
