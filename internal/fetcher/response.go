package fetcher

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/andybalholm/brotli"
)

// errorBodyLimit is how much of the body of a non-2xx answer is kept (for
// the status page and debugging). The rest is not an error: it is dropped.
const errorBodyLimit = 64 << 10

// drainLimit is how much of a redirect or error body is read past what is
// kept, so the connection can go back to the idle pool; a longer body closes
// the connection instead.
const drainLimit = 64 << 10

// Hop is one redirect that was followed: From answered Status with a
// Location pointing To (resolved to an absolute URL).
type Hop struct {
	Status   int
	From, To string
}

// Response is what one fetch learned.
type Response struct {
	RequestURL string // the URL asked for
	FinalURL   string // the URL of the last hop (RequestURL without redirects)

	Status      int
	Header      http.Header // of the last hop
	ContentType string

	// Body is the decompressed body, at most Config.MaxBytes. For a 304 it
	// is empty; for a non-2xx status it holds at most the first 64 KiB.
	Body []byte
	// BodyHash is the hex SHA-256 of Body for a 2xx answer ("" otherwise).
	BodyHash string

	// Conditional is true when the last hop carried validators (so a 304
	// refers to them). SentETag and SentLastModified are the validators that
	// were sent, on whichever hop matched Request.ValidatorURL.
	Conditional                bool
	SentETag, SentLastModified string

	// ETag and LastModified are as received on the last hop (200, 304 or
	// other); empty when the answer carried none. A 304 without validators
	// means "keep the ones you have"; that is the caller's decision.
	ETag, LastModified string

	Redirects []Hop
	// PermanentURL is FinalURL when there was at least one redirect and
	// every hop was a 301 or 308: the URL to remember once it serves a feed.
	PermanentURL string

	// WireBytes counts body bytes as they came off the wire (compressed),
	// over all hops; headers are not counted.
	WireBytes int64
	// Elapsed is the wall time of the whole fetch, measured with the
	// monotonic clock (it is a measurement, not a decision, so it does not
	// come from an injected clock).
	Elapsed time.Duration
}

// ReadResponse reads resp (and closes its body) into a Response: status,
// headers, validators received, the validators its request carried, and the
// body decompressed according to Content-Encoding (gzip, x-gzip, br,
// deflate, identity, or a comma-separated chain of them) and capped at
// cfg.MaxBytes. A 2xx body longer than that is an ErrTooLarge (the Response
// is still returned, without Body); reading stops at the cap, so a gzip
// bomb is never inflated past it. A body that says gzip but does not start
// with the gzip magic is taken as it is (a common server misconfiguration).
//
// It needs no network: tests hand it an *http.Response they built. Redirect
// following, RequestURL and Redirects are Client.Fetch's business.
func ReadResponse(cfg Config, resp *http.Response) (*Response, error) {
	cfg = cfg.withDefaults()
	defer resp.Body.Close()
	out := &Response{
		Status:       resp.StatusCode,
		Header:       resp.Header,
		ContentType:  resp.Header.Get("Content-Type"),
		ETag:         resp.Header.Get("ETag"),
		LastModified: resp.Header.Get("Last-Modified"),
	}
	url := ""
	if req := resp.Request; req != nil {
		url = req.URL.String()
		out.RequestURL, out.FinalURL = url, url
		out.SentETag = req.Header.Get("If-None-Match")
		out.SentLastModified = req.Header.Get("If-Modified-Since")
		out.Conditional = out.SentETag != "" || out.SentLastModified != ""
	}
	cr := &countingReader{r: resp.Body}
	defer func() { out.WireBytes = cr.n }()

	ok := resp.StatusCode >= 200 && resp.StatusCode < 300
	if resp.StatusCode == http.StatusNotModified || resp.StatusCode == http.StatusNoContent ||
		(resp.Request != nil && resp.Request.Method == http.MethodHead) {
		drain(cr)
		return out, nil
	}
	limit := cfg.MaxBytes
	if !ok {
		limit = min(limit, errorBodyLimit)
	}
	encodings := contentEncodings(resp.Header)
	if ok && len(encodings) == 0 && resp.ContentLength > limit {
		return out, newError(KindTooLarge, url,
			fmt.Errorf("Content-Length %d is over the limit of %d bytes", resp.ContentLength, limit))
	}
	dec, err := decoder(cr, encodings)
	if err != nil {
		return out, newError(KindBadEncoding, url, err)
	}
	var buf bytes.Buffer
	if n := resp.ContentLength; len(encodings) == 0 && n > 0 && n <= limit {
		buf.Grow(int(n))
	}
	_, err = buf.ReadFrom(io.LimitReader(dec, limit+1))
	if err != nil {
		// No context here (one that never ends); Fetch re-classifies with
		// its contexts.
		return out, classify(context.Background(), context.Background(), url, fmt.Errorf("reading body: %w", err))
	}
	body := buf.Bytes()
	if int64(len(body)) > limit {
		if ok {
			return out, newError(KindTooLarge, url,
				fmt.Errorf("body is over the limit of %d bytes after decompression", limit))
		}
		body = body[:limit]
	} else if !ok {
		drain(cr)
	}
	out.Body = body
	if ok {
		sum := sha256.Sum256(body)
		out.BodyHash = hex.EncodeToString(sum[:])
	}
	return out, nil
}

func contentEncodings(h http.Header) []string {
	var encs []string
	for _, v := range h.Values("Content-Encoding") {
		for e := range strings.SplitSeq(v, ",") {
			e = strings.ToLower(strings.TrimSpace(e))
			if e != "" && e != "identity" {
				encs = append(encs, e)
			}
		}
	}
	return encs
}

// decoder undoes the encodings, last applied first.
func decoder(r io.Reader, encodings []string) (io.Reader, error) {
	for i := len(encodings) - 1; i >= 0; i-- {
		switch encodings[i] {
		case "gzip", "x-gzip":
			br := bufio.NewReader(r)
			magic, _ := br.Peek(2)
			if len(magic) < 2 || magic[0] != 0x1f || magic[1] != 0x8b {
				// Says gzip, is not: take the bytes as they are.
				r = br
				continue
			}
			zr, err := gzip.NewReader(br)
			if err != nil {
				return nil, err
			}
			r = zr
		case "br":
			r = brotli.NewReader(r)
		case "deflate":
			// RFC 9110 deflate is zlib; some servers send raw deflate, which
			// zlib rejects in its header: that surfaces as bad_encoding.
			zr, err := zlib.NewReader(r)
			if err != nil {
				return nil, fmt.Errorf("deflate: %w", err)
			}
			r = zr
		default:
			return nil, fmt.Errorf("unsupported Content-Encoding %q", encodings[i])
		}
	}
	return r, nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// drain reads up to drainLimit so the connection can be reused.
func drain(r io.Reader) {
	_, _ = io.CopyN(io.Discard, r, drainLimit)
}
