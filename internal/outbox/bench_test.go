package outbox

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wneessen/go-mail"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/smtptest"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
	"github.com/feedmail/feedmail/internal/token"
	"github.com/feedmail/feedmail/mailer"
)

// The outbox benchmark (Postgres): N queued instant emails claimed,
// rendered, charged, sent over loopback SMTP to a sink and marked sent,
// next to a bare go-mail loop sending pre-built messages to the same kind
// of sink on one connection.
//
//	FEEDMAIL_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test \
//	  go test -run '^$' -bench 'OutboxToSMTP|BareGoMailItems' -benchtime 3x ./internal/outbox

const (
	benchUsers = 100
	benchItems = 20 // per user: benchUsers*benchItems emails per run
)

// benchContent is a typical post: a few paragraphs, a link, a list.
var benchContent = strings.Repeat(`<p>Lorem ipsum dolor sit amet, <a href="/more">consectetur</a> adipiscing elit, sed do
eiusmod tempor incididunt ut labore et dolore magna aliqua.</p>`, 6) + `<ul><li>one</li><li>two</li></ul>`

// seedBench queues benchUsers*benchItems item emails (every user follows
// one feed and gets each of its items) and returns how many.
func seedBench(b *testing.B, s *store.Store, run int, now time.Time) int {
	b.Helper()
	ctx := context.Background()
	f, _, err := s.EnsureFeed(ctx, fmt.Sprintf("https://bench.example.org/%d/feed.xml", run))
	if err != nil {
		b.Fatal(err)
	}
	items := make([]store.Item, benchItems)
	for i := range items {
		pub := now.Add(-time.Duration(i) * time.Minute)
		items[i] = store.Item{FeedID: f.ID, Identity: fmt.Sprint("i", i), Link: fmt.Sprintf("https://bench.example.org/p/%d", i),
			Title: fmt.Sprintf("Benchmark post %d", i), Content: benchContent, Author: "Bench", PublishedAt: &pub, SeenAt: now}
	}
	if err := s.DB.CreateInBatches(&items, 500).Error; err != nil {
		b.Fatal(err)
	}
	var rows []store.OutboxRow
	for u := range benchUsers {
		email := fmt.Sprintf("r%d-%d@example.net", run, u)
		usr, _, err := s.EnsureUser(ctx, email)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := s.AddLedgerEntry(ctx, usr.ID, store.LedgerGrant, 1_000_000, "bench:"+email, ""); err != nil {
			b.Fatal(err)
		}
		sub, err := s.Subscribe(ctx, usr.ID, f.ID, nil, true)
		if err != nil {
			b.Fatal(err)
		}
		for _, it := range items {
			rows = append(rows, store.OutboxRow{Kind: store.KindItem, DedupeKey: fmt.Sprintf("item:%d:%d", sub.ID, it.ID),
				UserID: usr.ID, SubscriptionID: &sub.ID, ItemID: &it.ID, Address: email, Credits: 1,
				State: store.OutboxQueued, NextAttemptAt: now, CreatedAt: now})
		}
	}
	if err := s.DB.CreateInBatches(&rows, 1000).Error; err != nil {
		b.Fatal(err)
	}
	return len(rows)
}

func BenchmarkOutboxToSMTP(b *testing.B) {
	for _, c := range []struct {
		workers, batch, pool int
	}{
		{1, 200, 4},
		{2, 200, 4},
	} {
		b.Run(fmt.Sprintf("workers=%d,batch=%d,pool=%d", c.workers, c.batch, c.pool), func(b *testing.B) {
			s := storetest.OpenPostgres(b, storetest.Options{MaxOpenConns: 8})
			sink, err := smtptest.Start(smtptest.Options{Discard: true})
			if err != nil {
				b.Fatal(err)
			}
			defer sink.Close()
			cfg, err := mailer.ParseSMTPURL(sink.URL() + fmt.Sprintf("&pool=%d", c.pool))
			if err != nil {
				b.Fatal(err)
			}
			tr := mailer.NewSMTP(cfg)
			defer tr.Close()
			signer, _ := token.NewSigner([]byte("bench-secret-0123456789abcdef"))
			o, err := NewOutbox(OutboxConfig{Store: s, Transport: tr, Sender: mailer.Sender{Address: "feedmail@example.com"},
				Links: links.New("https://feedmail.example.com", signer, "feedmail@example.com"), Clock: clock.Real{},
				Owner: "bench", Batch: c.batch})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			var total int
			var elapsed time.Duration
			run := 0
			for b.Loop() {
				b.StopTimer()
				run++
				n := seedBench(b, s, run, time.Now().UTC())
				before := sink.Count()
				b.StartTimer()
				start := time.Now()
				var wg sync.WaitGroup
				for range c.workers {
					wg.Go(func() {
						for {
							got, err := o.SendDue(ctx)
							if err != nil {
								b.Error(err)
								return
							}
							if got == 0 {
								return
							}
						}
					})
				}
				wg.Wait()
				elapsed += time.Since(start)
				b.StopTimer()
				if got := sink.Count() - before; got != n {
					b.Fatalf("sink got %d of %d", got, n)
				}
				var sent int64
				s.DB.Model(&store.OutboxRow{}).Where("state = ?", store.OutboxSent).Count(&sent)
				if int(sent) != total+n {
					b.Fatalf("%d rows marked sent, want %d", sent, total+n)
				}
				total += n
				b.StartTimer()
			}
			b.ReportMetric(float64(total)/elapsed.Seconds(), "emails/s")
		})
	}
}

// BenchmarkBareGoMailItems is the baseline: pre-built messages sent with go-mail
// over one connection to the sink, nothing else.
func BenchmarkBareGoMailItems(b *testing.B) {
	sink, err := smtptest.Start(smtptest.Options{Discard: true})
	if err != nil {
		b.Fatal(err)
	}
	defer sink.Close()
	cfg, err := mailer.ParseSMTPURL(sink.URL())
	if err != nil {
		b.Fatal(err)
	}
	sender := mailer.Sender{Address: "feedmail@example.com"}
	const n = benchUsers * benchItems
	msgs := make([]*mail.Msg, n)
	now := time.Now()
	for i := range msgs {
		m, err := sender.Item(mailer.ItemEmail{To: fmt.Sprintf("r%d@example.net", i), FeedTitle: "Bench", FeedURL: "https://bench.example.org/feed.xml",
			MessageID: sender.ItemMessageID(1, int64(i)), Date: now, ItemTitle: "Benchmark post", ItemLink: "https://bench.example.org/p/1",
			ItemHTML: benchContent})
		if err != nil {
			b.Fatal(err)
		}
		msgs[i] = m
	}
	c, err := mail.NewClient(cfg.Host, mail.WithPort(cfg.Port), mail.WithTLSPolicy(mail.NoTLS), mail.WithoutNoop())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var total int
	var elapsed time.Duration
	for b.Loop() {
		start := time.Now()
		if err := c.DialWithContext(ctx); err != nil {
			b.Fatal(err)
		}
		if err := c.Send(msgs...); err != nil {
			b.Fatal(err)
		}
		if err := c.Close(); err != nil {
			b.Fatal(err)
		}
		elapsed += time.Since(start)
		total += n
	}
	b.ReportMetric(float64(total)/elapsed.Seconds(), "emails/s")
}
