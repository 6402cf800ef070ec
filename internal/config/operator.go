package config

import (
	"encoding/hex"
	"strconv"
)

// DefaultImportMaxBytes is FEEDMAIL_API_IMPORT_MAX_BYTES's default: 1 GiB,
// some seven million readers of two feeds.
const DefaultImportMaxBytes = 1 << 30

// readOperator reads the operator token's hash and the import body cap;
// it returns the variable at fault and why, or "", "".
func (c *Config) readOperator(get func(k, def string) string) (string, string) {
	if h := c.OperatorTokenSHA256; h != "" {
		if _, err := hex.DecodeString(h); err != nil || len(h) != 64 {
			return "FEEDMAIL_OPERATOR_TOKEN_SHA256", "must be 64 hex digits (the SHA-256 `feedmail operator token` prints)"
		}
	}
	n, err := strconv.ParseInt(get("FEEDMAIL_API_IMPORT_MAX_BYTES", strconv.Itoa(DefaultImportMaxBytes)), 10, 64)
	if err != nil || n < 1 {
		return "FEEDMAIL_API_IMPORT_MAX_BYTES", "must be a whole number of bytes ≥ 1"
	}
	c.ImportMaxBytes = n
	return "", ""
}
