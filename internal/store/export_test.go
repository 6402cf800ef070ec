package store

// What the external tests of this package read of its unexported parts.
var (
	PausedSQLForTest     = pausedSQL
	PauseEndedSQLForTest = pauseEndedSQL
	SerialDSNForTest     = serialDSN
)

// OutboxClaimSQLForTest is ClaimOutbox's statement on s's database.
func OutboxClaimSQLForTest(s *Store) string { return outboxClaimSQL(s.sqlDialect()) }

// BounceHoldSQLForTest is bounceHoldSQL.
var BounceHoldSQLForTest = bounceHoldSQL
