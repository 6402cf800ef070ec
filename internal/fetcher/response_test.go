package fetcher

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
)

const feedBody = `<?xml version="1.0"?><rss version="2.0"><channel><title>T</title></channel></rss>`

func gz(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func br(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := brotli.NewWriter(&buf)
	_, _ = w.Write(b)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func zl(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := zlib.NewWriter(&buf)
	_, _ = w.Write(b)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// gzipBomb returns a gzip stream inflating to n zero bytes.
func gzipBomb(t testing.TB, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zero := make([]byte, 1<<20)
	for n > 0 {
		k := min(n, len(zero))
		_, _ = zw.Write(zero[:k])
		n -= k
	}
	_ = zw.Close()
	return buf.Bytes()
}

func hashOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// fakeResponse builds a response as the transport would hand it over.
func fakeResponse(status int, hdr http.Header, body []byte, sent http.Header) *http.Response {
	u, _ := url.Parse("https://blog.example/feed")
	if hdr == nil {
		hdr = http.Header{}
	}
	if sent == nil {
		sent = http.Header{}
	}
	return &http.Response{
		StatusCode:    status,
		Header:        hdr,
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: -1,
		Request:       &http.Request{Method: http.MethodGet, URL: u, Header: sent},
	}
}

func TestReadResponse(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 2000)
	cfg := Config{MaxBytes: 1000}
	tests := []struct {
		name     string
		status   int
		hdr      http.Header
		wire     []byte
		sent     http.Header
		wantBody []byte
		wantKind Kind
		wantHash bool
	}{
		{name: "identity", status: 200, wire: []byte(feedBody), wantBody: []byte(feedBody), wantHash: true},
		{name: "gzip", status: 200, hdr: http.Header{"Content-Encoding": {"gzip"}}, wire: gz(t, []byte(feedBody)), wantBody: []byte(feedBody), wantHash: true},
		{name: "x-gzip", status: 200, hdr: http.Header{"Content-Encoding": {"x-gzip"}}, wire: gz(t, []byte(feedBody)), wantBody: []byte(feedBody), wantHash: true},
		{name: "br", status: 200, hdr: http.Header{"Content-Encoding": {"br"}}, wire: br(t, []byte(feedBody)), wantBody: []byte(feedBody), wantHash: true},
		{name: "deflate (zlib)", status: 200, hdr: http.Header{"Content-Encoding": {"deflate"}}, wire: zl(t, []byte(feedBody)), wantBody: []byte(feedBody), wantHash: true},
		{name: "gzip then br", status: 200, hdr: http.Header{"Content-Encoding": {"gzip, br"}}, wire: br(t, gz(t, []byte(feedBody))), wantBody: []byte(feedBody), wantHash: true},
		{name: "says gzip, is not", status: 200, hdr: http.Header{"Content-Encoding": {"gzip"}}, wire: []byte(feedBody), wantBody: []byte(feedBody), wantHash: true},
		{name: "identity named", status: 200, hdr: http.Header{"Content-Encoding": {"identity"}}, wire: []byte(feedBody), wantBody: []byte(feedBody), wantHash: true},
		{name: "empty 200", status: 200, wire: nil, wantBody: []byte{}, wantHash: true},
		{name: "exactly MaxBytes", status: 200, wire: big[:1000], wantBody: big[:1000], wantHash: true},
		{name: "one byte over", status: 200, wire: big[:1001], wantKind: KindTooLarge},
		{name: "gzip bomb cut", status: 200, hdr: http.Header{"Content-Encoding": {"gzip"}}, wire: gzipBomb(t, 4<<20), wantKind: KindTooLarge},
		{name: "br over the cap", status: 200, hdr: http.Header{"Content-Encoding": {"br"}}, wire: br(t, big), wantKind: KindTooLarge},
		{name: "corrupt gzip", status: 200, hdr: http.Header{"Content-Encoding": {"gzip"}}, wire: append([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3}, []byte("garbage!garbage!")...), wantKind: KindBadEncoding},
		{name: "corrupt br", status: 200, hdr: http.Header{"Content-Encoding": {"br"}}, wire: []byte("this is not brotli at all, no"), wantKind: KindBadEncoding},
		{name: "unknown encoding", status: 200, hdr: http.Header{"Content-Encoding": {"zstd"}}, wire: []byte("x"), wantKind: KindBadEncoding},
		{name: "304", status: 304, hdr: http.Header{"Etag": {`W/"new"`}}, sent: http.Header{"If-None-Match": {`W/"old"`}}},
		{name: "404 body kept, cut, no error", status: 404, wire: bytes.Repeat([]byte("n"), 100<<10), wantBody: bytes.Repeat([]byte("n"), 1000)},
		{name: "500 small body", status: 500, wire: []byte("oops"), wantBody: []byte("oops")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := fakeResponse(tt.status, tt.hdr, tt.wire, tt.sent)
			got, err := ReadResponse(cfg, resp)
			if got == nil {
				t.Fatal("nil Response")
			}
			if got.Status != tt.status || got.FinalURL != "https://blog.example/feed" {
				t.Errorf("status %d final %q", got.Status, got.FinalURL)
			}
			if tt.wantKind == "" && tt.status == 200 && got.WireBytes != int64(len(tt.wire)) {
				t.Errorf("WireBytes %d, want %d", got.WireBytes, len(tt.wire))
			}
			if tt.wantKind != "" {
				if KindOf(err) != tt.wantKind {
					t.Fatalf("error %v (kind %q), want %q", err, KindOf(err), tt.wantKind)
				}
				if got.Body != nil {
					t.Errorf("Body kept on error")
				}
				if tt.wantKind == KindTooLarge && got.WireBytes > 200<<10 {
					t.Errorf("read %d wire bytes to find a 1000-byte cap", got.WireBytes)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Body, tt.wantBody) {
				t.Errorf("body %q, want %q", trunc(got.Body), trunc(tt.wantBody))
			}
			if tt.wantHash != (got.BodyHash != "") || (tt.wantHash && got.BodyHash != hashOf(tt.wantBody)) {
				t.Errorf("BodyHash %q", got.BodyHash)
			}
		})
	}
}

func trunc(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}

func TestReadResponseValidators(t *testing.T) {
	hdr := http.Header{"Etag": {`W/"v2"`}, "Last-Modified": {"Sun, 01 Mar 2026 10:00:00 GMT"}, "Content-Type": {"application/rss+xml"}}
	sent := http.Header{"If-None-Match": {`W/"v1"`}, "If-Modified-Since": {"yesterday"}}
	got, err := ReadResponse(Config{}, fakeResponse(304, hdr, nil, sent))
	if err != nil {
		t.Fatal(err)
	}
	if got.ETag != `W/"v2"` || got.LastModified != "Sun, 01 Mar 2026 10:00:00 GMT" ||
		!got.Conditional || got.SentETag != `W/"v1"` || got.SentLastModified != "yesterday" ||
		got.ContentType != "application/rss+xml" || len(got.Body) != 0 || got.BodyHash != "" {
		t.Fatalf("%+v", got)
	}
	got, _ = ReadResponse(Config{}, fakeResponse(200, nil, []byte("x"), nil))
	if got.Conditional || got.ETag != "" {
		t.Fatalf("unconditional: %+v", got)
	}
}

func TestReadResponseContentLengthOverCap(t *testing.T) {
	resp := fakeResponse(200, nil, []byte("short"), nil)
	resp.ContentLength = 1 << 30
	body := &trackingBody{Reader: strings.NewReader("short")}
	resp.Body = body
	_, err := ReadResponse(Config{MaxBytes: 100}, resp)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("%v, want too_large from Content-Length alone", err)
	}
	if !body.closed {
		t.Fatal("body not closed")
	}
}

type trackingBody struct {
	io.Reader
	closed bool
}

func (b *trackingBody) Close() error { b.closed = true; return nil }
