package article

import (
	"context"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/fetcher"
)

// Limits of a page fetch: smaller than a feed's, since a page that takes
// longer or weighs more is not worth an email's wait.
const (
	PageTimeout  = 20 * time.Second
	PageMaxBytes = 2 << 20
)

// pageAccept is the Accept header of a page request.
const pageAccept = "text/html, application/xhtml+xml;q=0.9, */*;q=0.1"

// Getter fetches one URL (a *fetcher.Client).
type Getter interface {
	Fetch(ctx context.Context, r fetcher.Request) (*fetcher.Response, error)
}

// Reader reads articles. Safe for concurrent use.
type Reader struct {
	get    Getter
	clock  clock.Clock
	robots *robotsCache
}

// NewReader returns a Reader fetching through a fetcher client made from
// cfg (its guard and User-Agent) with the page limits above, or cfg's
// own where they are tighter.
func NewReader(cfg fetcher.Config, clk clock.Clock) *Reader {
	if cfg.Timeout <= 0 || cfg.Timeout > PageTimeout {
		cfg.Timeout = PageTimeout
	}
	if cfg.MaxBytes <= 0 || cfg.MaxBytes > PageMaxBytes {
		cfg.MaxBytes = PageMaxBytes
	}
	return NewReaderWith(fetcher.New(cfg), clk)
}

// NewReaderWith returns a Reader fetching through get.
func NewReaderWith(get Getter, clk clock.Clock) *Reader {
	if clk == nil {
		clk = clock.Real{}
	}
	return &Reader{get: get, clock: clk, robots: &robotsCache{slots: map[string]*robotsSlot{}}}
}

// Failure is why a page gave no article. Status and Header are the page's
// answer when there was one (the caller backs off a host that answered 429
// or 503); Canceled is set when the caller's context ended (nothing is
// wrong with the page).
type Failure struct {
	Reason   string
	Status   int
	Header   http.Header
	Canceled bool
}

func (f *Failure) Error() string { return f.Reason }

// Read fetches link's page, when the host's robots.txt allows it, and
// returns its article and the page's final URL. Every failure is a
// *Failure saying why in words a reader may see.
func (r *Reader) Read(ctx context.Context, link string) (Article, string, error) {
	u, err := url.Parse(link)
	if err != nil || !u.IsAbs() || (u.Scheme != "http" && u.Scheme != "https") {
		return Article{}, "", &Failure{Reason: "the post has no web address"}
	}
	if !r.robots.allowed(ctx, r.get, u, r.clock.Now()) {
		if ctx.Err() != nil {
			return Article{}, "", &Failure{Reason: "stopped", Canceled: true}
		}
		return Article{}, "", &Failure{Reason: "the site's robots.txt does not allow it"}
	}
	resp, err := r.get.Fetch(ctx, fetcher.Request{URL: link, Accept: pageAccept})
	if err != nil {
		return Article{}, "", fetchFailure(resp, err)
	}
	if resp.Status < 200 || resp.Status > 299 {
		return Article{}, "", &Failure{Reason: fmt.Sprintf("the page answered %d %s", resp.Status, http.StatusText(resp.Status)),
			Status: resp.Status, Header: resp.Header}
	}
	if mt, _, _ := mime.ParseMediaType(resp.ContentType); mt != "" && mt != "text/html" && mt != "application/xhtml+xml" {
		return Article{}, "", &Failure{Reason: "the link is not a web page (" + mt + ")", Status: resp.Status}
	}
	a, err := Extract(resp.Body, resp.FinalURL)
	if err != nil {
		return Article{}, "", &Failure{Reason: "no article could be found on the page", Status: resp.Status}
	}
	return a, resp.FinalURL, nil
}

// fetchFailure words a fetch error.
func fetchFailure(resp *fetcher.Response, err error) *Failure {
	f := &Failure{Reason: "the page could not be fetched: " + fetcher.Describe(err).Reason}
	if resp != nil {
		f.Status, f.Header = resp.Status, resp.Header
	}
	switch fetcher.KindOf(err) {
	case fetcher.KindCanceled:
		f.Canceled = true
	case fetcher.KindTooLarge:
		f.Reason = "the page is too large"
	case fetcher.KindTimeout:
		f.Reason = "the page took too long"
	}
	return f
}
