package bench

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"regexp"
	"strings"
	"sync"
	"time"
)

// recorder keeps every message the sink and the webhook receiver took in,
// as receptions, for the oracle. Safe for concurrent use.
type recorder struct {
	mu    sync.Mutex
	recs  []reception
	bad   int // messages it could not read
	count int
}

// postLink matches a farm post's link ("<feed URL>/i/<n>").
var postLink = regexp.MustCompile(`https?://[^\s"'<>]+/i/[0-9]+`)

// mailReader is the reader id of an email recipient.
func mailReader(addr string) string { return "mail:" + strings.ToLower(strings.Trim(addr, "<> ")) }

// hookReader is the reader id of a webhook path.
func hookReader(path string) string { return "hook:" + path }

// email records one message the sink took in: one reception per recipient.
func (r *recorder) email(to []string, data []byte, at time.Time, dropped bool) {
	key, links, err := readEmail(data)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.count++
	if err != nil {
		r.bad++
		return
	}
	for _, a := range to {
		r.recs = append(r.recs, reception{Key: key, Reader: mailReader(a), Links: links, At: at, Dropped: dropped})
	}
}

// hook records one webhook the receiver answered 2xx, or took from a
// sender gone before the answer (replyLost).
func (r *recorder) hook(id, path string, body []byte, at time.Time, replyLost bool) {
	links := hookLinks(body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.count++
	r.recs = append(r.recs, reception{Key: id, Reader: hookReader(path), Links: links, At: at, Dropped: replyLost})
}

// hookReplyLost marks the newest reception of webhook id at path as one
// whose 2xx never reached its sender: a repeat of it is inside the
// webhook's duplicate window, as a resend after a drop after the dot is.
func (r *recorder) hookReplyLost(id, path string) {
	reader := hookReader(path)
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.recs) - 1; i >= 0; i-- {
		if rc := &r.recs[i]; rc.Key == id && rc.Reader == reader {
			rc.Dropped = true
			return
		}
	}
}

// snapshot returns the receptions so far and how many could not be read.
func (r *recorder) snapshot() ([]reception, int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]reception(nil), r.recs...), r.bad, r.count
}

// readEmail returns an email's Message-ID and the distinct post links in
// its decoded text parts.
func readEmail(data []byte) (string, []string, error) {
	m, err := mail.ReadMessage(bytes.NewReader(data))
	if err != nil {
		return "", nil, err
	}
	var text bytes.Buffer
	if err := decodePart(m.Header.Get("Content-Type"), m.Header.Get("Content-Transfer-Encoding"), m.Body, &text, 0); err != nil {
		return "", nil, err
	}
	return strings.TrimSpace(m.Header.Get("Message-ID")), uniqueLinks(text.String()), nil
}

// decodePart appends the decoded text of a MIME part (walking multiparts)
// to out.
func decodePart(ctype, cte string, body io.Reader, out *bytes.Buffer, depth int) error {
	mt, params, err := mime.ParseMediaType(ctype)
	if err != nil {
		mt = "text/plain"
	}
	if strings.HasPrefix(mt, "multipart/") && depth < 5 {
		mr := multipart.NewReader(body, params["boundary"])
		for {
			p, err := mr.NextRawPart()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			if err := decodePart(p.Header.Get("Content-Type"), p.Header.Get("Content-Transfer-Encoding"), p, out, depth+1); err != nil {
				return err
			}
		}
	}
	if !strings.HasPrefix(mt, "text/") {
		return nil
	}
	switch strings.ToLower(strings.TrimSpace(cte)) {
	case "quoted-printable":
		body = quotedprintable.NewReader(body)
	case "base64":
		body = base64.NewDecoder(base64.StdEncoding, &newlineSkipper{r: body})
	}
	_, err = io.Copy(out, body)
	out.WriteByte('\n')
	return err
}

// newlineSkipper drops CR and LF, which base64 bodies wrap with.
type newlineSkipper struct{ r io.Reader }

func (n *newlineSkipper) Read(p []byte) (int, error) {
	k, err := n.r.Read(p)
	j := 0
	for _, b := range p[:k] {
		if b != '\r' && b != '\n' {
			p[j] = b
			j++
		}
	}
	return j, err
}

// hookLinks returns the post links in a webhook's JSON body (any "link"
// anywhere in it).
func hookLinks(body []byte) []string {
	var v any
	if json.Unmarshal(body, &v) != nil {
		return uniqueLinks(string(body))
	}
	var links []string
	var walk func(any)
	walk = func(x any) {
		switch t := x.(type) {
		case map[string]any:
			for k, e := range t {
				if s, ok := e.(string); ok && k == "link" {
					links = append(links, s)
				}
				walk(e)
			}
		case []any:
			for _, e := range t {
				walk(e)
			}
		}
	}
	walk(v)
	return uniqueLinks(strings.Join(links, "\n"))
}

// uniqueLinks returns the distinct post links in s, in order.
func uniqueLinks(s string) []string {
	var out []string
	seen := map[string]bool{}
	for _, l := range postLink.FindAllString(s, -1) {
		if !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	return out
}
