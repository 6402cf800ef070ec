package store

// What the external tests of this package read of its unexported parts.
var (
	PausedSQLForTest     = pausedSQL
	PauseEndedSQLForTest = pauseEndedSQL
	SerialDSNForTest     = serialDSN
)
