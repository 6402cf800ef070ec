package model_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/model"
)

// TestItemMediaEncode pins the text items.media holds: "" for no media,
// else the JSON of the fields that are set, under these names, with HTML
// characters escaped as encoding/json does. Rows written before keep
// being read, so it must not change.
func TestItemMediaEncode(t *testing.T) {
	if got := (model.ItemMedia{}).Encode(); got != "" {
		t.Errorf("empty media encode to %q, want \"\"", got)
	}
	m := model.ItemMedia{Enclosures: []model.Enclosure{{URL: "https://x.example/a.mp3", Type: "audio/mpeg", Length: 10, Duration: 61},
		{URL: "https://x.example/b.pdf"}}, Thumbnail: "https://x.example/t.jpg", Description: "<p>About</p>",
		DescriptionHTML: true, Player: "https://x.example/play"}
	want := `{"enclosures":[{"url":"https://x.example/a.mp3","type":"audio/mpeg","length":10,"duration":61},` +
		`{"url":"https://x.example/b.pdf"}],"thumbnail":"https://x.example/t.jpg","description":"\u003cp\u003eAbout\u003c/p\u003e",` +
		`"description_html":true,"player":"https://x.example/play"}`
	if got := m.Encode(); got != want {
		t.Errorf("Encode\n got %s\nwant %s", got, want)
	}
	if v, err := m.Value(); err != nil || v != want {
		t.Errorf("Value = %v, %v", v, err)
	}
	var back model.ItemMedia
	if err := back.Scan([]byte(want)); err != nil || back.Encode() != want {
		t.Errorf("Scan of Encode = %+v, %v", back, err)
	}
}

// TestLedgerLineJSON pins a ledger line's JSON, the same in the API's
// ledger (its OpenAPI LedgerEntry) and the account export.
func TestLedgerLineJSON(t *testing.T) {
	b, err := json.Marshal(model.LedgerLine{ID: 7, Kind: "charge", Amount: -1, BalanceAfter: 41, Reason: "post",
		CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)})
	want := `{"id":7,"kind":"charge","amount":-1,"balance_after":41,"reason":"post","created_at":"2026-01-02T03:04:05Z"}`
	if err != nil || string(b) != want {
		t.Errorf("LedgerLine JSON\n got %s (%v)\nwant %s", b, err, want)
	}
}

func TestItemMediaScan(t *testing.T) {
	var m model.ItemMedia
	for _, src := range []any{nil, "", []byte{}} {
		if err := m.Scan(src); err != nil || !m.Empty() {
			t.Errorf("Scan(%#v) = %+v, %v", src, m, err)
		}
	}
	if err := m.Scan(`{"thumbnail":"https://x.example/t.jpg"}`); err != nil || m.Thumbnail != "https://x.example/t.jpg" {
		t.Errorf("Scan JSON = %+v, %v", m, err)
	}
	if err := m.Scan("not json"); err == nil {
		t.Error("Scan accepted text that is not JSON")
	}
	if err := m.Scan(42); err == nil {
		t.Error("Scan accepted an integer")
	}
}
