#!/usr/bin/env bash
# The test command (README): every package with the race detector.
#
#   ./scripts/test.sh                     # on SQLite (temporary files)
#   FEEDMAIL_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test ./scripts/test.sh
#
# Tests that need Postgres whatever the run (several processes, claims under
# contention) read FEEDMAIL_TEST_POSTGRES_URL and skip without it, except under
# CI=true, where they fail; so do tests that need ../shared/corpus.
#
# The pure-Go SQLite engine (C translated to Go, modernc.org/...) and the
# database/sql driver wrapped around it (github.com/glebarez/go-sqlite, which
# implements SQLite's mutexes in Go) are built without race instrumentation:
# instrumented, SQLite runs ~40x slower and the suite would not finish. Only
# those packages: the gorm dialector and everything of ours stay instrumented.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$#" -eq 0 ]; then set -- ./...; fi
exec go test -race -count=1 -timeout 40m \
  -gcflags='modernc.org/...=-race=false' -gcflags='github.com/glebarez/go-sqlite=-race=false' \
  "$@"
