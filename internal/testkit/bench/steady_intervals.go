package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/feedmail/feedmail/internal/testkit/farm"
)

// farmBase is the farm's base URL from the URL of one of its feeds.
func farmBase(feedURL string) string {
	if i := strings.Index(feedURL, "/f/"); i >= 0 {
		return feedURL[:i]
	}
	return feedURL
}

// farmIntervals reads every farm's histogram of the time between
// successive requests for the same feed and returns their sum as
// cumulative buckets (seconds), the form quantile takes.
func (s *steady) farmIntervals(ctx context.Context) ([]bucket, error) {
	var sum []int64
	var bounds []float64
	for _, base := range s.farmURLs {
		iv, err := readIntervals(ctx, base)
		if err != nil {
			return nil, err
		}
		if sum == nil {
			sum, bounds = make([]int64, len(iv.Counts)), iv.BoundsSeconds
		}
		if len(iv.Counts) != len(sum) || len(iv.BoundsSeconds) != len(bounds) {
			return nil, fmt.Errorf("%s%s: %d buckets, another farm has %d", base, farm.IntervalsPath, len(iv.Counts), len(sum))
		}
		for i, n := range iv.Counts {
			sum[i] += n
		}
	}
	out := make([]bucket, len(sum))
	var below float64
	for i, n := range sum {
		below += float64(n)
		le := math.Inf(1)
		if i < len(bounds) {
			le = bounds[i]
		}
		out[i] = bucket{le, below}
	}
	return out, nil
}

// readIntervals GETs one farm's histogram.
func readIntervals(ctx context.Context, base string) (farm.Intervals, error) {
	var iv farm.Intervals
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+farm.IntervalsPath, nil)
	if err != nil {
		return iv, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return iv, fmt.Errorf("farm intervals: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return iv, fmt.Errorf("farm intervals: %s answered %d", base, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&iv); err != nil {
		return iv, fmt.Errorf("farm intervals from %s: %w", base, err)
	}
	return iv, nil
}
