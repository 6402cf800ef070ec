package mailer

import (
	"strings"
	"testing"
	"time"
)

// A post made once and shared gives every reader the email Sender.Item
// gives them: only the post's part is shared, the reader's own is theirs.
func TestItemPostSharedByReaders(t *testing.T) {
	s := testSender()
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	first := testItem()
	shared := NewItemPost(first)
	for _, tc := range []struct {
		name string
		edit func(e *ItemEmail)
		want string // in the shared email's HTML: the reader's own part
	}{
		{"same reader", func(*ItemEmail) {}, "reader@example.org"},
		{"other address", func(e *ItemEmail) { e.To = "other@example.net" }, "other@example.net"},
		{"own links", func(e *ItemEmail) {
			e.Footer.UnsubscribeURL = "https://feedmail.example.com/unsubscribe/TOKEN-OTHER"
			e.Footer.ManageURL = "https://feedmail.example.com/account/TOKEN-B"
		}, "TOKEN-OTHER"},
		{"own time zone", func(e *ItemEmail) {
			e.Location = ny
			e.Published = time.Date(2026, 3, 3, 2, 0, 0, 0, time.UTC)
		}, "March 2, 2026"},
		{"own message id", func(e *ItemEmail) { e.MessageID = s.MessageID("item.8.99") }, "reader@example.org"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := testItem()
			tc.edit(&e)
			mShared, err := s.ItemFor(e, shared)
			if err != nil {
				t.Fatal(err)
			}
			mOwn, err := s.Item(e)
			if err != nil {
				t.Fatal(err)
			}
			got, want := renderParse(t, mShared), renderParse(t, mOwn)
			if got.html != want.html || got.text != want.text {
				t.Fatalf("shared post gives another body:\nhtml %q\nwant %q\ntext %q\nwant %q", got.html, want.html, got.text, want.text)
			}
			for _, h := range []string{"From", "To", "Subject", "Message-Id", "List-Id", "List-Unsubscribe", "Date"} {
				if got.get(h) != want.get(h) {
					t.Errorf("%s = %q, want %q", h, got.get(h), want.get(h))
				}
			}
			if !strings.Contains(got.html, tc.want) {
				t.Errorf("shared email's HTML lacks the reader's %q", tc.want)
			}
		})
	}
}
