package faults

import (
	"os"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/newitems"
	"github.com/feedmail/feedmail/internal/testkit/farm"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
	"github.com/feedmail/feedmail/mailer"
)

// TestMain warms up, from one goroutine, the process-wide caches that the
// XML decoder (encoding/xml's type-info sync.Map, used by gofeed) and the
// mail templates fill on first use, before the parallel rows start.
//
// Why: under -race, with the SQLite packages built uninstrumented as
// scripts/test.sh does, two rows parsing their first RSS document at the
// same moment get a data race reported between encoding/xml.getTypeInfo
// (storing a new *typeInfo in its sync.Map) and Decoder.unmarshal (reading
// it after Load). The publication through sync.Map is correct; the race
// detector does not see it (internal/sync is built without race function
// instrumentation). It is the same false positive outbox.Outbox.warmUp
// documents for the mailer. Parsing once up front makes every later use a
// plain Load.
//
// On Postgres the same happens with crypto/tls's certificate cache (a
// sync.Map of weak pointers) when parallel rows make their first TLS
// connections at once; one connection held open for the whole run keeps
// the server's parsed certificate in that cache, so later handshakes only
// load it.
func TestMain(m *testing.M) {
	warmUp()
	release := storetest.HoldConnection()
	code := m.Run()
	release()
	os.Exit(code)
}

func warmUp() {
	fm := farm.New(clock.NewFake(t0))
	defer fm.Close()
	for _, spec := range []farm.Spec{
		{Format: farm.RSS, ItemCount: 2}, {Format: farm.Atom, ItemCount: 2}, {Format: farm.JSONFeed, ItemCount: 2},
		{Hostile: farm.InvalidUTF8, ItemCount: 2}, {Hostile: farm.EntityBomb, ItemCount: 2}, {Hostile: farm.HTMLPage, ItemCount: 2},
	} {
		f := fm.AddFeed(spec)
		_, _ = newitems.Parse(f.Body(), spec.Format.ContentType(), f.URL())
	}
	s := mailer.Sender{Address: from}
	if m, err := s.Item(mailer.ItemEmail{To: "warm@example.net", FeedTitle: "Warm", FeedURL: "https://example.net/feed",
		ListID: s.FeedListID(1), MessageID: s.ItemMessageID(1, 1), Date: t0, ItemTitle: "Warm", ItemLink: "https://example.net/1",
		ItemHTML: "<p>warm</p>", Published: t0.Add(-time.Hour)}); err == nil {
		_, _ = mailer.Render(m)
	}
}
