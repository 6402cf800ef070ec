package bench_test

import (
	"os"
	"testing"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/newitems"
	"github.com/feedmail/feedmail/internal/testkit/bench"
	"github.com/feedmail/feedmail/internal/testkit/farm"
)

// TestMain parses one document of each format from one goroutine before
// the tests start, filling encoding/xml's process-wide type-info cache
// (used by gofeed) while nothing else runs. Under -race with the SQLite
// packages built uninstrumented (scripts/test.sh), the first fills of that
// sync.Map from two poller workers at once are reported as a data race the
// detector cannot see through; faults/main_test.go documents the same
// false positive. A test binary started again as the outbox's SMTP sink
// runs only that.
func TestMain(m *testing.M) {
	if code, ok := bench.RunChildRole(); ok {
		os.Exit(code)
	}
	fm := farm.New(clock.Real{})
	for _, format := range []farm.Format{farm.RSS, farm.Atom, farm.JSONFeed} {
		f := fm.AddFeed(farm.Spec{Format: format, ItemCount: 2})
		_, _ = newitems.Parse(f.Body(), format.ContentType(), f.URL())
	}
	fm.Close()
	os.Exit(m.Run())
}
