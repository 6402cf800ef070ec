// Package api owns feedmail's JSON API under /api/v1: per-account bearer
// tokens (their format, issue and check), the per-token rate limit, the
// routes over a person's subscriptions, digests, followed feeds' status,
// credits and data export, the operator's bulk import of many people
// (its own token, checked against the configured hash; the import's
// rules are package subscribe's), errors as RFC 9457 problem details, and the
// OpenAPI 3.1 document that describes all of it (openapi.json, served as
// is). Requests authenticate with "Authorization: Bearer TOKEN" only: no
// cookie is read, so no cross-site request can act for a person.
//
// It must not run SQL (package store does), hold the rules of a use case
// (package subscribe does: a subscription made here gets the signup
// form's checks), nor render pages. docs/api.md is the reader's guide.
package api
