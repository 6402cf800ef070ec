package farm

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/feedmail/feedmail/internal/clock"
)

// discardWriter is the cheapest http.ResponseWriter: the handler's own
// cost is what the benchmarks below see.
type discardWriter struct {
	h    http.Header
	code int
	n    int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(code int)        { w.code = code }
func (w *discardWriter) Write(b []byte) (int, error) { w.n += len(b); return len(b), nil }

// benchServe answers b.N poller-like requests for feeds of a farm set up
// like the steady benchmark's, with If-None-Match when cond.
func benchServe(b *testing.B, cond bool, want int) {
	fm := New(clock.Real{})
	defer fm.Close()
	fm.SetRecording(false)
	const feeds = 1000
	reqs := make([]*http.Request, feeds)
	for i := range reqs {
		f := fm.AddFeed(Spec{Format: Format(i % 3), ItemCount: 10, ETag: ETagStrong, LastModified: true,
			CacheControl: "max-age=300", Gzip: true})
		r, _ := http.NewRequest(http.MethodGet, fm.URL()+"/f/"+strconv.Itoa(f.ID()), nil)
		r.Header["Accept-Encoding"] = []string{"gzip"}
		r.Header["User-Agent"] = []string{"bench/1"}
		if cond {
			r.Header["If-None-Match"] = []string{f.ETag()}
		}
		reqs[i] = r
	}
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		clear(w.h)
		fm.ServeHTTP(w, reqs[i%feeds])
		if w.code != want {
			b.Fatalf("status %d, want %d", w.code, want)
		}
	}
}

func BenchmarkServe304(b *testing.B)     { benchServe(b, true, http.StatusNotModified) }
func BenchmarkServe200Gzip(b *testing.B) { benchServe(b, false, http.StatusOK) }
