package mailer

import (
	"strconv"
	"testing"
	"time"
)

// TestItemFrameGivesEachReaderTheirEmail holds the frame's two promises:
// every reader of a shared post gets exactly the body Sender.Item gives
// them (whatever their strings hold: characters the templates escape,
// a '%', another scheme, an empty link, another time zone), and readers
// alike cost no template execution of their own.
func TestItemFrameGivesEachReaderTheirEmail(t *testing.T) {
	s := testSender()
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	shared := NewItemPost(testItem())
	check := func(t *testing.T, p *ItemPost, e ItemEmail) {
		t.Helper()
		mShared, err := s.ItemFor(e, p)
		if err != nil {
			t.Fatal(err)
		}
		mOwn, err := s.Item(e)
		if err != nil {
			t.Fatal(err)
		}
		got, want := renderParse(t, mShared), renderParse(t, mOwn)
		if got.html != want.html || got.text != want.text {
			t.Fatalf("%+v: the shared post gives another body:\nhtml %q\nwant %q\ntext %q\nwant %q", e.Footer, got.html, want.html, got.text, want.text)
		}
	}
	for i := range 50 {
		e := testItem()
		e.To = "reader" + strconv.Itoa(i) + "@example.org"
		e.Footer.ManageURL = "https://feedmail.example.com/account/TOKEN-" + strconv.Itoa(i)
		e.Footer.UnsubscribeURL = "https://feedmail.example.com/unsubscribe/U" + strconv.Itoa(i)
		check(t, shared, e)
	}
	if n := shared.executions.Load(); n != 2 {
		t.Errorf("50 readers alike cost %d template executions, want 2 (the first reader's, and the frame's)", n)
	}
	// A character the first reader did not show costs one full rendering,
	// which proves it for the next readers.
	for i := range 10 {
		e := testItem()
		e.Footer.ManageURL = "https://feedmail.example.com/account/T_" + strconv.Itoa(i)
		check(t, shared, e)
	}
	if n := shared.executions.Load(); n != 3 {
		t.Errorf("10 readers with a new character in a link: %d template executions in all, want 3", n)
	}
	for _, tc := range []struct {
		name string
		edit func(e *ItemEmail)
	}{
		{"plus and quote in the address", func(e *ItemEmail) { e.To = "o'neil+feeds@example.org" }},
		{"ampersand and angle in a link", func(e *ItemEmail) { e.Footer.ManageURL = "https://feedmail.example.com/a?x=1&y=<2>" }},
		{"percent in a link", func(e *ItemEmail) { e.Footer.UnsubscribeURL = "https://feedmail.example.com/u/a%2Fb%41" }},
		{"another scheme", func(e *ItemEmail) { e.Footer.ManageURL = "javascript:alert(1)" }},
		{"no account link", func(e *ItemEmail) { e.Footer.ManageURL = "" }},
		{"non-ASCII address", func(e *ItemEmail) { e.To = "zoë@exämple.org" }},
		{"own time zone", func(e *ItemEmail) { e.Location = ny; e.Published = time.Date(2026, 3, 3, 2, 0, 0, 0, time.UTC) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := testItem()
			tc.edit(&e)
			check(t, shared, e)
		})
	}
	t.Run("a token in the post", func(t *testing.T) {
		e := testItem()
		e.ItemHTML = "<p>" + slotTokens[slotTo] + "</p>"
		p := NewItemPost(e)
		for i := range 3 {
			e.To = "r" + strconv.Itoa(i) + "@example.org"
			check(t, p, e)
		}
	})
}
