package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/store"
	"github.com/feedmail/feedmail/internal/testkit/storetest"
)

// TestTakeoverLoggedAndCounted: the store serve opens reports a claim of
// work whose holder's lease ran out; serve logs it once at info, naming
// the kind, how many, the dead holder, the new one and how long the lease
// had been expired, and counts it in /metrics.
func TestTakeoverLoggedAndCounted(t *testing.T) {
	dsn := storetest.FreshDSN(t, storetest.URL())
	env := map[string]string{"FEEDMAIL_DATABASE_URL": dsn, "FEEDMAIL_SECRET": "0123456789abcdef0123",
		"FEEDMAIL_BASE_URL": "https://feedmail.example"}
	var logs bytes.Buffer
	a, err := newApp(environOf(env), &logs, &logs)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	ctx := context.Background()
	st, err := a.openStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	u, _, err := st.EnsureUser(ctx, "reader@example.org")
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC)
	for i, key := range []string{"item:1:1", "item:1:2"} {
		row := store.OutboxRow{Kind: store.KindItem, DedupeKey: key, UserID: u.ID, Address: u.Email, State: store.OutboxQueued,
			NextAttemptAt: t0.Add(time.Duration(i) * time.Second), CreatedAt: t0}
		if err := st.DB.Create(&row).Error; err != nil {
			t.Fatal(err)
		}
	}
	if rows, err := st.ClaimOutbox(ctx, "host-1-mailer", time.Minute, t0.Add(time.Second), 10); err != nil || len(rows) != 2 {
		t.Fatalf("first claim: %d rows, %v", len(rows), err)
	}
	if strings.Contains(logs.String(), "leases taken over") {
		t.Fatalf("a claim of rows nobody held was logged as a takeover:\n%s", logs.String())
	}
	if rows, err := st.ClaimOutbox(ctx, "host-2-mailer", time.Minute, t0.Add(6*time.Minute), 10); err != nil || len(rows) != 2 {
		t.Fatalf("second claim: %d rows, %v", len(rows), err)
	}
	want := `level=INFO msg="leases taken over" kind=outbox count=2 from=[host-1-mailer] by=host-2-mailer expired_for=4m59s`
	if n := strings.Count(logs.String(), "leases taken over"); n != 1 || !strings.Contains(logs.String(), want) {
		t.Errorf("logs have %d takeover lines, want one with %q:\n%s", n, want, logs.String())
	}
	w := httptest.NewRecorder()
	a.metrics.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if m := `feedmail_leases_taken_over_total{kind="outbox"} 2`; !strings.Contains(w.Body.String(), m) {
		t.Errorf("/metrics lacks %s", m)
	}
}
