package fetcher_test

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/feedmail/feedmail/internal/clock"
	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/testkit/farm"
)

// A first poll stores the validators; the next one sends them back and gets
// a 304. The farm stands in for a publisher on 127.0.0.1, so the guard is
// off (as FEEDMAIL_ALLOW_PRIVATE_NETWORKS=1 would do).
func ExampleClient_Fetch() {
	fm := farm.New(clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)))
	defer fm.Close()
	feed := fm.AddFeed(farm.Spec{ItemCount: 3, ETag: farm.ETagWeak, LastModified: true})

	c := fetcher.New(fetcher.Config{BaseURL: "https://feedmail.example", AllowPrivate: true})
	defer c.CloseIdleConnections()
	ctx := context.Background()

	first, err := c.Fetch(ctx, fetcher.Request{URL: feed.URL(), Subscribers: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(first.Status, first.LastModified, len(first.Body) > 0)

	again, err := c.Fetch(ctx, fetcher.Request{
		URL: feed.URL(), ETag: first.ETag, LastModified: first.LastModified, Subscribers: 2,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(again.Status, again.Conditional, again.SentETag == first.ETag)
	fmt.Println(fm.RequestsFor(feed)[1].UserAgent)
	// Output:
	// 200 Sun, 01 Mar 2026 12:00:00 GMT true
	// 304 true true
	// feedmail/1 (+https://feedmail.example/bot; 2 subscribers)
}

// The guard refuses loopback, private and link-local addresses after DNS
// resolution, unless Config.AllowPrivate.
func ExampleCheckAddr() {
	for _, ip := range []string{"169.254.169.254", "::ffff:10.0.0.1", "192.0.2.1", "8.8.8.8"} {
		fmt.Println(fetcher.CheckAddr(netip.MustParseAddr(ip)))
	}
	// Output:
	// fetch: private_address: refusing to connect to 169.254.169.254: link-local (cloud metadata) address
	// fetch: private_address: refusing to connect to ::ffff:10.0.0.1: private address
	// fetch: private_address: refusing to connect to 192.0.2.1: documentation (192.0.2.0/24) address
	// <nil>
}
