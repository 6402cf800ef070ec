package ledgercsv

import (
	"bytes"
	"encoding/csv"
	"reflect"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/store"
)

func TestCell(t *testing.T) {
	cases := map[string]string{
		"":                   "",
		"trial credits":      "trial credits",
		"=HYPERLINK(\"x\")":  "'=HYPERLINK(\"x\")",
		"+1":                 "'+1",
		"-2+3":               "'-2+3",
		"@SUM(A1)":           "'@SUM(A1)",
		"\tx":                "'\tx",
		"\rx":                "'\rx",
		"a=b":                "a=b",
		"'quoted already":    "'quoted already",
		"purchase:cs_test_1": "purchase:cs_test_1",
	}
	for in, want := range cases {
		if got := Cell(in); got != want {
			t.Errorf("Cell(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestWrite: the rows read back with encoding/csv as written, commas,
// quotes and newlines kept, formulas defused, amounts signed.
func TestWrite(t *testing.T) {
	at := time.Date(2026, 3, 2, 9, 30, 0, 0, time.FixedZone("CET", 3600))
	entries := []store.LedgerEntry{
		{ID: 1, Kind: "grant", Amount: 500, BalanceAfter: 500, IdempotencyKey: "trial:5", Reason: "trial credits", CreatedAt: at},
		{ID: 2, Kind: "charge", Amount: -1, BalanceAfter: 499, IdempotencyKey: "charge:item:3:4", Reason: "item email item:3:4", CreatedAt: at.Add(time.Hour)},
		{ID: 3, Kind: "grant", Amount: 7, BalanceAfter: 506, IdempotencyKey: "grant:admin:5:x",
			Reason: "=cmd|' /C calc'!A0, \"sorry\"\nsecond line", CreatedAt: at.Add(2 * time.Hour)},
		{ID: 4, Kind: "adjustment", Amount: -6, BalanceAfter: 500, IdempotencyKey: "-odd key", Reason: "@refund", CreatedAt: at.Add(3 * time.Hour)},
	}
	var b bytes.Buffer
	w, err := NewWriter(&b)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatalf("%v:\n%s", err, b.String())
	}
	want := [][]string{
		Header,
		{"2026-03-02T08:30:00Z", "grant", "+500", "500", "trial credits", "trial:5"},
		{"2026-03-02T09:30:00Z", "charge", "-1", "499", "item email item:3:4", "charge:item:3:4"},
		{"2026-03-02T10:30:00Z", "grant", "+7", "506", "'=cmd|' /C calc'!A0, \"sorry\"\nsecond line", "grant:admin:5:x"},
		{"2026-03-02T11:30:00Z", "adjustment", "-6", "500", "'@refund", "'-odd key"},
	}
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("rows:\n%q\nwant:\n%q", rows, want)
	}
}
