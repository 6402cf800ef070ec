package fetcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// Client fetches feeds over one shared Transport (keep-alive, at most
// Config.MaxConnsPerHost connections per host, the private-network guard in
// its dialer). It is safe for concurrent use; make one per process.
type Client struct {
	cfg Config
	// tr makes each request. Fetch follows redirects itself, one
	// BuildRequest per hop, so nothing is copied from one hop to the next
	// (no Referer, no validators meant for another URL, no cookies): an
	// http.Client would add nothing but a copy of every request's headers
	// (kept for redirects it never follows here) and a cookie check.
	tr *http.Transport
}

// New returns a Client for cfg (zero fields take their defaults).
func New(cfg Config) *Client { return newClient(cfg, hooks{}) }

func newClient(cfg Config, h hooks) *Client {
	cfg = cfg.withDefaults()
	return &Client{cfg: cfg, tr: newTransport(cfg, h)}
}

// Config returns the configuration in force, defaults filled in.
func (c *Client) Config() Config { return c.cfg }

// CloseIdleConnections closes the kept-alive connections that are idle.
func (c *Client) CloseIdleConnections() { c.tr.CloseIdleConnections() }

// Fetch GETs r.URL, following up to Config.MaxRedirects redirects
// (301, 302, 303, 307, 308 with a Location; every hop is a GET, recorded in
// Response.Redirects), within Config.Timeout for the whole.
//
// Any status that is not a redirect ends the fetch and comes back as a
// Response with a nil error: the poller decides what 304, 404, 410, 429 or
// 5xx mean. A 3xx without a Location is returned the same way.
//
// On error, Fetch still returns the Response with what was learned before
// the failure (RequestURL, Redirects, the validators sent, Status when the
// headers had arrived, Elapsed), and an *Error whose Kind says what went
// wrong. When ctx itself ends, the Kind is KindCanceled, never KindTimeout,
// so a shutdown does not penalise the feed.
func (c *Client) Fetch(ctx context.Context, r Request) (*Response, error) {
	start := time.Now()
	out := &Response{RequestURL: r.URL, FinalURL: r.URL}
	defer func() { out.Elapsed = time.Since(start) }()

	fctx, cancel := context.WithTimeoutCause(ctx, c.cfg.Timeout, errDeadline)
	defer cancel()

	vurl := r.ValidatorURL
	if vurl == "" {
		vurl = r.URL
	}
	cur := r.URL
	permanent := true
	for {
		req, err := BuildRequest(fctx, c.cfg, Request{
			URL: cur, ValidatorURL: vurl,
			ETag: r.ETag, LastModified: r.LastModified, Subscribers: r.Subscribers, Accept: r.Accept,
		})
		if err != nil {
			return out, err
		}
		cur = req.URL.String()
		out.FinalURL = cur
		inm, ims := req.Header.Get("If-None-Match"), req.Header.Get("If-Modified-Since")
		if inm != "" || ims != "" {
			out.SentETag, out.SentLastModified = inm, ims
		}

		resp, err := c.tr.RoundTrip(req)
		if err != nil {
			return out, classify(ctx, fctx, cur, unwrapURLError(err))
		}
		if loc := resp.Header.Get("Location"); isRedirect(resp.StatusCode) && loc != "" {
			out.Status, out.Header = resp.StatusCode, resp.Header
			next, lerr := resp.Location()
			n, _ := io.CopyN(io.Discard, resp.Body, drainLimit)
			out.WireBytes += n
			resp.Body.Close()
			if lerr != nil {
				return out, newError(KindBadURL, cur, fmt.Errorf("redirect %d to Location %q: %w", resp.StatusCode, loc, lerr))
			}
			to := next.String()
			out.Redirects = append(out.Redirects, Hop{Status: resp.StatusCode, From: cur, To: to})
			if resp.StatusCode != http.StatusMovedPermanently && resp.StatusCode != http.StatusPermanentRedirect {
				permanent = false
			}
			if len(out.Redirects) > c.cfg.MaxRedirects {
				return out, newError(KindTooManyRedirects, cur,
					fmt.Errorf("stopped after %d redirects (limit %d)", len(out.Redirects)-1, c.cfg.MaxRedirects))
			}
			cur = to
			continue
		}

		rr, err := ReadResponse(c.cfg, resp)
		out.Status, out.Header, out.ContentType = rr.Status, rr.Header, rr.ContentType
		out.ETag, out.LastModified = rr.ETag, rr.LastModified
		out.Conditional = rr.Conditional
		out.WireBytes += rr.WireBytes
		if err != nil {
			var fe *Error
			if errors.As(err, &fe) && fe.Kind != KindTooLarge && fe.Kind != KindBadEncoding {
				// A read error: say whether it was our timeout or the caller.
				err = classify(ctx, fctx, cur, fe.Err)
			}
			return out, err
		}
		out.Body, out.BodyHash = rr.Body, rr.BodyHash
		if len(out.Redirects) > 0 && permanent && out.FinalURL != out.RequestURL {
			out.PermanentURL = out.FinalURL
		}
		return out, nil
	}
}

func isRedirect(status int) bool {
	switch status {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// unwrapURLError drops the *url.Error layer net/http adds ("Get URL: ...");
// the *Error carries the URL itself.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil {
		return ue.Err
	}
	return err
}
