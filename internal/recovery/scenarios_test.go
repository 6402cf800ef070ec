package recovery_test

import (
	"context"
	"testing"

	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/recovery"
	"github.com/feedmail/feedmail/internal/testkit/sites"
	"github.com/feedmail/feedmail/internal/testkit/testutil"
)

// TestScenarios runs every row of the moved-and-dead table on the test
// sites through the real fetcher: each recoverable feed is moved or offered
// on the first attempt, nothing else is, and no attempt costs the sites
// more than MaxRequests requests.
func TestScenarios(t *testing.T) {
	rows, err := sites.Scenarios(testutil.CorpusDir(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range rows {
		t.Run(sc.Name, func(t *testing.T) {
			s := sites.Start(t)
			c := fetcher.New(s.FetcherConfig())
			t.Cleanup(c.CloseIdleConnections)
			fetch := func(ctx context.Context, u string) (*fetcher.Response, error) {
				return c.Fetch(ctx, fetcher.Request{URL: u})
			}
			sc.Before(s)
			if resp, err := fetch(t.Context(), sc.OldURL); err != nil || resp.Status != 200 {
				t.Fatalf("before: %s answered %v, %v; want the old feed", sc.OldURL, resp, err)
			}
			k, err := sc.Known()
			if err != nil {
				t.Fatal(err)
			}
			// A feed dies days after its last good poll: no connection of
			// then is still open.
			c.CloseIdleConnections()
			s.Reset()
			sc.After(s)

			res := recovery.Attempt(t.Context(), k, fetch, 0)

			t.Logf("verdict %s %s; %d requests (%d on the sites); tried %v", res.Verdict, res.To, res.Requests, s.Count(""), res.Tried)
			for _, c := range res.Candidates {
				t.Logf("  %-55s %-45s common=%d %s", c.URL, c.FoundBy, c.PostsInCommon, c.Verdict)
			}
			if res.Verdict != sc.WantVerdict || res.To != sc.WantTo {
				t.Errorf("verdict %q to %q, want %q to %q", res.Verdict, res.To, sc.WantVerdict, sc.WantTo)
			}
			if sc.Recoverable != (res.Verdict != recovery.None) {
				t.Errorf("recoverable %v but verdict %q", sc.Recoverable, res.Verdict)
			}
			if res.Requests > recovery.MaxRequests || s.Count("") > res.Requests {
				t.Errorf("%d requests counted, %d in the sites' log; want at most %d, and the log within the count",
					res.Requests, s.Count(""), recovery.MaxRequests)
			}
			if res.Requests != len(res.Tried) {
				t.Errorf("Requests %d but %d URLs tried", res.Requests, len(res.Tried))
			}
		})
	}
}
