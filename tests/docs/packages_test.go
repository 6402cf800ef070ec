package docs

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/feedmail/feedmail/"

// root is the repository's root, two folders up from this package.
var root = filepath.Join("..", "..")

// goList runs go list with args in the repository's root and returns the
// packages it prints, without the module prefix.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	var pkgs []string
	for _, l := range strings.Fields(string(out)) {
		if p, ok := strings.CutPrefix(l, module); ok {
			pkgs = append(pkgs, p)
		}
	}
	return pkgs
}

// isProduct reports whether package p is product code: not the test and
// benchmark infrastructure (internal/testkit, tests/, cmd/feedbench,
// cmd/feedfarm) and deploy (no Go code: a test of what operators install).
func isProduct(p string) bool {
	return !strings.HasPrefix(p, "internal/testkit/") && !strings.HasPrefix(p, "tests/") &&
		p != "cmd/feedbench" && p != "cmd/feedfarm" && p != "deploy"
}

// tableRows returns the first cells (`path`) of the table rows under the
// heading of file (a docs/ file), up to the next heading of that level.
func tableRows(t *testing.T, file, heading string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "docs", file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	row := regexp.MustCompile("^\\| `([^`]+)` \\|")
	level := heading[:strings.IndexByte(heading, ' ')+1]
	var rows []string
	in := heading == ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case heading != "" && line == heading:
			in = true
		case in && heading != "" && strings.HasPrefix(line, level):
			return rows
		case in:
			if m := row.FindStringSubmatch(line); m != nil {
				rows = append(rows, m[1])
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if !in {
		t.Fatalf("docs/%s has no heading %q", file, heading)
	}
	return rows
}

// TestDesignListsEveryPackage: docs/design.md's package table has one row
// per product package, and none for a package that does not exist.
func TestDesignListsEveryPackage(t *testing.T) {
	var product []string
	for _, p := range goList(t, "./...") {
		if isProduct(p) {
			product = append(product, p)
		}
	}
	rows := tableRows(t, "design.md", "## Packages")
	for _, p := range product {
		if !slices.Contains(rows, p) {
			t.Errorf("product package %s is missing from docs/design.md's package table (## Packages): add its row (owns | must not)", p)
		}
	}
	for _, r := range rows {
		if !slices.Contains(product, r) {
			t.Errorf("docs/design.md's package table lists %s, which is not a product package", r)
		}
	}
	seen := map[string]bool{}
	for _, r := range rows {
		if seen[r] {
			t.Errorf("docs/design.md's package table lists %s twice", r)
		}
		seen[r] = true
	}
}

// TestLayoutListsEveryPackage: docs/layout.md has a row for every package,
// product or test (as the CI script checks too).
func TestLayoutListsEveryPackage(t *testing.T) {
	rows := tableRows(t, "layout.md", "")
	for _, p := range goList(t, "./...") {
		if !slices.Contains(rows, p) {
			t.Errorf("package %s is missing from docs/layout.md: add a | `%s` | row", p, p)
		}
	}
}

// TestForbiddenImports: the edges the package table forbids are absent
// from the product's import graph (test files aside).
func TestForbiddenImports(t *testing.T) {
	rules := []struct {
		pkg    string
		reason string
		banned []string
	}{
		{"internal/forecast", "pure: the caller passes posts and schedules", []string{"internal/store", "digest"}},
		{"internal/lowbalance", "the feed history is passed in", []string{"internal/subscribe"}},
		{"internal/recovery", "it acts only through the Fetch it is given", []string{"internal/store", "mailer"}},
		{"internal/notices", "everything that sends imports it", []string{"internal/web", "poller", "mailer"}},
		{"internal/links", "routes, not handlers", []string{"internal/web"}},
		{"billing", "the rules, not their storage", []string{"internal/store"}},
		{"internal/channel/...", "the outbox builds deliveries from the store", []string{"internal/store"}},
	}
	for _, r := range rules {
		deps := goList(t, "-deps", "./"+r.pkg)
		for _, b := range r.banned {
			if slices.Contains(deps, b) {
				t.Errorf("%s depends on %s (%s)", r.pkg, b, r.reason)
			}
		}
	}
	// internal/model is the leaf the others share: it imports none of them.
	for _, d := range goList(t, "-deps", "./internal/model") {
		if d != "internal/model" {
			t.Errorf("internal/model depends on %s (plain values import no feedmail package)", d)
		}
	}
}
