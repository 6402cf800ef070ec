package farm

import (
	"io"
	"net/http"
	"testing"

	"github.com/feedmail/feedmail/internal/clock"
)

// TestSetRecording checks that a farm with recording off answers as before
// but keeps no record, and that turning it back on records again.
func TestSetRecording(t *testing.T) {
	fm := New(clock.Real{})
	defer fm.Close()
	f := fm.AddFeed(Spec{ItemCount: 1, ETag: ETagStrong})
	get := func() int {
		t.Helper()
		resp, err := http.Get(f.URL())
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	fm.SetRecording(false)
	if code := get(); code != http.StatusOK || len(fm.Requests()) != 0 {
		t.Fatalf("recording off: status %d, %d records; want 200 and none", code, len(fm.Requests()))
	}
	fm.SetRecording(true)
	if code := get(); code != http.StatusOK || len(fm.Requests()) != 1 {
		t.Fatalf("recording on: status %d, %d records; want 200 and one", code, len(fm.Requests()))
	}
}
