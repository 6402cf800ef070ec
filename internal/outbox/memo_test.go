package outbox

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/mailer"
)

// Renders of one pass make each post once, however many ask at once, and
// one per format; time zones are loaded once, unknown ones as nil.
func TestRenderMemo(t *testing.T) {
	var m renderMemo
	var made atomic.Int32
	keys := []postKey{{1, store.FormatFull}, {1, store.FormatSummary}, {2, store.FormatFull}}
	got := make([][]*mailer.ItemPost, 8)
	var wg sync.WaitGroup
	for g := range got {
		wg.Go(func() {
			for _, k := range keys {
				got[g] = append(got[g], m.post(k, func() *mailer.ItemPost {
					made.Add(1)
					return &mailer.ItemPost{}
				}))
			}
		})
	}
	wg.Wait()
	if n := made.Load(); n != int32(len(keys)) {
		t.Fatalf("made %d posts for %d keys", n, len(keys))
	}
	for g := range got {
		for i := range keys {
			if got[g][i] != got[0][i] {
				t.Fatalf("render %d got another post for %v", g, keys[i])
			}
		}
	}
	for _, tc := range []struct {
		zone, want string
	}{{"Europe/Paris", "Europe/Paris"}, {"Europe/Paris", "Europe/Paris"}, {"", ""}, {"Nowhere/Bogus", ""}} {
		loc := m.location(tc.zone)
		if name := loc.String(); (loc == nil && tc.want != "") || (loc != nil && name != tc.want) {
			t.Errorf("location(%q) = %v, want %q", tc.zone, loc, tc.want)
		}
	}
}
