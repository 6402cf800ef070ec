package mailer

import (
	"testing"
)

func TestFeedbackID(t *testing.T) {
	tests := []struct {
		feed, owner int64
		kind, want  string
	}{
		{12, 0, "item", "12:0:item:feedmail"},
		{12, 7, "item", "12:7:item:feedmail"},
		{0, 0, "digest", "0:0:digest:feedmail"},
		{0, 0, "a:b c", "0:0:a-b-c:feedmail"},
		{-1, -1, "", "0:0:email:feedmail"},
	}
	for _, tt := range tests {
		if got := FeedbackID(tt.feed, tt.owner, tt.kind); got != tt.want {
			t.Errorf("FeedbackID(%d, %d, %q) = %q, want %q", tt.feed, tt.owner, tt.kind, got, tt.want)
		}
	}
}
