// Package worker holds what the background workers (poller, mailer, digest)
// share in their setup: filling a config's unset fields with
// defaults. It owns no business rules and touches no database; leasing and
// claiming are package store's.
package worker

// Default sets *v to def when *v is zero or negative (a config field left
// unset).
func Default[T ~int | ~int64 | ~float64](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}
