package model

import "time"

// ExportPublisher is the publisher's part of an account export.
type ExportPublisher struct {
	OwnedFeeds []ExportOwnedFeed `json:"owned_feeds"`
	Claims     []ExportClaim     `json:"claims"`
}

// ExportOwnedFeed is a feed the person pays for, since when and how they
// were verified, and the current lapse of their credits, if any.
type ExportOwnedFeed struct {
	FeedURL    string     `json:"feed_url"`
	VerifiedBy string     `json:"verified_by"`
	Since      time.Time  `json:"since"`
	LapsedAt   *time.Time `json:"credits_ran_out_at,omitempty"`
}

// ExportClaim is a claim to a feed with its token and the last check.
type ExportClaim struct {
	FeedURL    string     `json:"feed_url"`
	Token      string     `json:"token"`
	CreatedAt  time.Time  `json:"created_at"`
	CheckedAt  *time.Time `json:"checked_at,omitempty"`
	LastError  string     `json:"last_error,omitempty"`
	VerifiedAt *time.Time `json:"verified_at,omitempty"`
}
