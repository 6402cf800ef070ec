package store

// AllModels lists every model, for schema checks.
func AllModels() []any {
	return []any{&Setting{}, &User{}, &Feed{}, &PollLog{}, &Subscription{}, &Item{}, &Digest{},
		&DigestIssue{}, &DigestItem{}, &OutboxRow{}, &LedgerEntry{}, &Purchase{}, &PaymentEvent{}, &Host{}, &InboundEvent{}, &MailEvent{},
		&MailDestination{}, &APIToken{}}
}
