package store

import (
	"context"
	"fmt"
	"sort"
	"time"
)

// DomainHealth is what mail to one recipient domain did over a window
// (`feedmail mail health`): the counts, from the outbox and mail_events,
// and the domain's pause. What they mean for the operator is the mailer's
// to say.
type DomainHealth struct {
	Domain string
	Sent   int64 // outbox rows sent in the window
	Hard   int64 // failures that counted hard against a reader
	Soft   int64 // failures that counted soft (mailbox full, too large)
	// Sender counts the sender-side failures by reason (blocked,
	// authentication, policy, rate-limited, syntax).
	Sender map[string]int64
	// Other counts the failures that counted against nobody and are not
	// the sender's: transient, undetermined, a reader's own filter.
	Other      int64
	Complaints int64
	// Pause is the domain's mail_destinations row, nil when it has none.
	Pause *MailDestination
}

// MailHealth returns the health of every recipient domain mail went to,
// failed at or was complained about since since, or that has a
// mail_destinations row, sorted by volume (sent, then failures and
// complaints, then name). Three queries: sent rows grouped by domain (a
// scan of the window's sent rows), mail_events grouped by domain and
// judgement, and the destinations table. Tombstoned addresses of deleted
// accounts (domain "invalid") are left out.
func (s *Store) MailHealth(ctx context.Context, since time.Time) ([]DomainHealth, error) {
	db := s.DB.WithContext(ctx)
	byDomain := map[string]*DomainHealth{}
	get := func(domain string) *DomainHealth {
		h := byDomain[domain]
		if h == nil {
			h = &DomainHealth{Domain: domain, Sender: map[string]int64{}}
			byDomain[domain] = h
		}
		return h
	}
	var sent []struct {
		Domain string
		N      int64
	}
	if err := db.Raw(`SELECT `+s.sqlDialect().domainExpr()+` AS domain, COUNT(*) AS n FROM outbox
WHERE state = ? AND sent_at >= ? AND to_addr LIKE '%@%' GROUP BY 1`, OutboxSent, utc(since)).Scan(&sent).Error; err != nil {
		return nil, fmt.Errorf("mail health: sent: %w", err)
	}
	for _, r := range sent {
		get(r.Domain).Sent += r.N
	}
	var events []struct {
		Domain, Kind, Reason, Party, Severity string
		N                                     int64
	}
	if err := db.Raw(`SELECT domain, kind, reason, party, severity, COUNT(*) AS n FROM mail_events
WHERE at >= ? GROUP BY domain, kind, reason, party, severity`, utc(since)).Scan(&events).Error; err != nil {
		return nil, fmt.Errorf("mail health: events: %w", err)
	}
	for _, e := range events {
		h := get(e.Domain)
		switch {
		case e.Kind == MailComplaint:
			h.Complaints += e.N
		case e.Severity == SeverityHard:
			h.Hard += e.N
		case e.Severity == SeveritySoft:
			h.Soft += e.N
		case e.Party == "sender":
			h.Sender[e.Reason] += e.N
		default:
			h.Other += e.N
		}
	}
	var dests []MailDestination
	if err := db.Find(&dests).Error; err != nil {
		return nil, fmt.Errorf("mail health: destinations: %w", err)
	}
	for i := range dests {
		dests[i].PausedUntil, dests[i].UpdatedAt = dests[i].PausedUntil.UTC(), dests[i].UpdatedAt.UTC()
		get(dests[i].Domain).Pause = &dests[i]
	}
	return sortHealth(byDomain), nil
}

// sortHealth lists the domains by volume (see MailHealth).
func sortHealth(byDomain map[string]*DomainHealth) []DomainHealth {
	out := make([]DomainHealth, 0, len(byDomain))
	for d, h := range byDomain {
		if d != "" && d != "invalid" {
			out = append(out, *h)
		}
	}
	trouble := func(h DomainHealth) int64 {
		n := h.Hard + h.Soft + h.Other + h.Complaints
		for _, v := range h.Sender {
			n += v
		}
		return n
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].Sent != out[b].Sent {
			return out[a].Sent > out[b].Sent
		}
		if ta, tb := trouble(out[a]), trouble(out[b]); ta != tb {
			return ta > tb
		}
		return out[a].Domain < out[b].Domain
	})
	return out
}
