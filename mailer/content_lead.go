package mailer

import (
	"strings"

	nethtml "golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// withoutLeadingImage returns feed HTML without the image it opens with
// (an <img> before any text, with the link and blocks left empty around
// it), and whether there was one. A video post whose feed gives a
// thumbnail shows that, with its play bar, in place of the small copy
// some feeds (Vimeo's) put first in the description.
func withoutLeadingImage(contentHTML string) (string, bool) {
	if !strings.Contains(strings.ToLower(contentHTML), "<img") {
		return contentHTML, false
	}
	ctx := &nethtml.Node{Type: nethtml.ElementNode, Data: "body", DataAtom: atom.Body}
	nodes, err := nethtml.ParseFragment(strings.NewReader(contentHTML), ctx)
	if err != nil {
		return contentHTML, false
	}
	root := &nethtml.Node{Type: nethtml.ElementNode, Data: "div", DataAtom: atom.Div}
	for _, n := range nodes {
		root.AppendChild(n)
	}
	img := leadingImage(root)
	if img == nil {
		return contentHTML, false
	}
	for n := img; n != root && n.Parent != nil; {
		parent := n.Parent
		parent.RemoveChild(n)
		if parent == root || hasContent(parent) {
			break
		}
		n = parent
	}
	var b strings.Builder
	for c := root.FirstChild; c != nil; c = c.NextSibling {
		if err := nethtml.Render(&b, c); err != nil {
			return contentHTML, false
		}
	}
	return b.String(), true
}

// leadingImage is the first <img> under n when no text comes before it,
// else nil.
func leadingImage(n *nethtml.Node) *nethtml.Node {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		switch {
		case c.Type == nethtml.TextNode:
			if strings.TrimSpace(c.Data) != "" {
				return nil
			}
		case c.Type != nethtml.ElementNode:
		case c.DataAtom == atom.Img:
			return c
		default:
			if img := leadingImage(c); img != nil {
				return img
			}
			if hasContent(c) {
				return nil
			}
		}
	}
	return nil
}

// hasContent reports whether n holds text or an image.
func hasContent(n *nethtml.Node) bool {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == nethtml.TextNode && strings.TrimSpace(c.Data) != "" {
			return true
		}
		if c.Type == nethtml.ElementNode && (c.DataAtom == atom.Img || hasContent(c)) {
			return true
		}
	}
	return false
}
