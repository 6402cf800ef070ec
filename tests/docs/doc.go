// Package docs checks that the map of the code in docs/ matches the code:
// every product package has its row in docs/design.md's package table (what
// it owns and must not do) and in docs/layout.md, no row names a package
// that is gone, and the import edges the design forbids are absent.
//
// The package has no code of its own; the tests are the product. It runs
// the go command (go list) from the repository's root.
package docs
