package fetcher

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"testing"

	"github.com/andybalholm/brotli"
)

// FuzzReadResponse hands ReadResponse arbitrary bodies with arbitrary
// Content-Encoding chains, Content-Length values and statuses, under a small
// size cap: the decoders (gzip, brotli, zlib, chains of them) never panic,
// never yield more than the cap, a 2xx body comes with its SHA-256, the
// wire count never exceeds what was sent, and every error is one of the
// kinds a body can cause (too large, bad encoding, or a broken stream).
func FuzzReadResponse(f *testing.F) {
	const limit = 4096
	feed := []byte(feedBody)
	gz := func(b []byte) []byte {
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		_, _ = w.Write(b)
		_ = w.Close()
		return buf.Bytes()
	}
	zl := func(b []byte) []byte {
		var buf bytes.Buffer
		w := zlib.NewWriter(&buf)
		_, _ = w.Write(b)
		_ = w.Close()
		return buf.Bytes()
	}
	brot := func(b []byte) []byte {
		var buf bytes.Buffer
		w := brotli.NewWriter(&buf)
		_, _ = w.Write(b)
		_ = w.Close()
		return buf.Bytes()
	}
	bomb := gz(make([]byte, 1<<20))
	for _, s := range []struct {
		body   []byte
		enc    string
		length int64
		status int
	}{
		{feed, "", int64(len(feed)), 200},
		{gz(feed), "gzip", -1, 200},
		{gz(feed), "x-gzip", -1, 200},
		{brot(feed), "br", -1, 200},
		{zl(feed), "deflate", -1, 200},
		{brot(gz(feed)), "gzip, br", -1, 200},
		{bomb, "gzip", int64(len(bomb)), 200},
		{append(bomb, bomb...), "gzip", -1, 200},
		{feed, "gzip", -1, 200},
		{gz(feed)[:20], "gzip", -1, 200},
		{feed, "compress", -1, 200},
		{feed, "identity, identity", 1 << 40, 200},
		{bomb, "gzip", -1, 500},
		{feed, "", -1, 304},
		{[]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff}, "gzip", -1, 200},
	} {
		f.Add(s.body, s.enc, s.length, s.status)
	}
	f.Fuzz(func(t *testing.T, body []byte, enc string, length int64, status int) {
		if status < 100 || status > 999 {
			status = 200
		}
		hdr := http.Header{}
		if enc != "" {
			hdr.Set("Content-Encoding", enc)
		}
		resp := fakeResponse(status, hdr, body, nil)
		resp.ContentLength = length
		out, err := ReadResponse(Config{MaxBytes: limit}, resp)
		if out == nil {
			t.Fatal("nil Response")
		}
		if out.WireBytes > int64(len(body)) {
			t.Fatalf("counted %d wire bytes of %d", out.WireBytes, len(body))
		}
		if len(out.Body) > limit {
			t.Fatalf("body of %d bytes over the cap of %d", len(out.Body), limit)
		}
		if err != nil {
			switch KindOf(err) {
			case KindTooLarge, KindBadEncoding, KindConnection:
			default:
				t.Fatalf("error of kind %q: %v", KindOf(err), err)
			}
			if out.Body != nil || out.BodyHash != "" {
				t.Fatalf("body kept with an error: %d bytes", len(out.Body))
			}
			return
		}
		ok := status >= 200 && status < 300
		if ok && status != http.StatusNoContent {
			sum := sha256.Sum256(out.Body)
			if out.BodyHash != hex.EncodeToString(sum[:]) {
				t.Fatalf("body hash %q does not match the body", out.BodyHash)
			}
		} else if out.BodyHash != "" {
			t.Fatalf("hash on a %d", status)
		}
		if !ok && len(out.Body) > errorBodyLimit {
			t.Fatalf("error body of %d bytes", len(out.Body))
		}
	})
}
