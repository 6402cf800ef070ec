package store

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// textAllowed are the constructs the package comment lets SQL text say
// because a gorm chain cannot say them plainly; a claim's or lease's
// conditional UPDATE is marked by a lease column in its WHERE.
var textAllowed = []struct {
	name string
	re   *regexp.Regexp
}{
	{"join", regexp.MustCompile(`\bJOIN\b`)},
	{"sub-select", regexp.MustCompile(`\(\s*SELECT\b`)},
	{"INSERT … SELECT", regexp.MustCompile(`^INSERT\b.*\bSELECT\b`)},
	{"ON CONFLICT", regexp.MustCompile(`\bON CONFLICT\b`)},
	{"UPDATE … FROM", regexp.MustCompile(`\bUPDATE\b.*\bFROM\b`)},
	{"RETURNING", regexp.MustCompile(`\bRETURNING\b`)},
	{"CASE", regexp.MustCompile(`\bCASE\b`)},
	{"a value from columns", regexp.MustCompile(`\b\w+ = (\w+\.)?[A-Z_]\w*\b`)},
	{"aggregate", regexp.MustCompile(`\b(COUNT|SUM|MIN|MAX|AVG)\(`)},
	{"claim or lease", regexp.MustCompile(`\bWHERE\b.*\bLEASE_(OWNER|UNTIL)\b`)},
}

// plainSQL reports whether a statement says nothing a gorm chain on one
// table could not say plainly (so it breaks the rule in doc.go).
func plainSQL(text string) bool {
	q := strings.ToUpper(strings.Join(strings.Fields(text), " "))
	q = strings.NewReplacer("= NULL", "= ?", "= TRUE", "= ?", "= FALSE", "= ?").Replace(q)
	for _, a := range textAllowed {
		if a.re.MatchString(q) {
			return false
		}
	}
	return true
}

// sqlText is the SQL of an Exec or Raw argument as far as the source
// shows it: string literals, package constants, a variable assigned once
// in the function and the call of a package function that only returns a
// string (vars["name()"]), joined by +; other parts become "?". ok is
// false when nothing of it is a literal.
func sqlText(e ast.Expr, vars map[string]ast.Expr) (text string, ok bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if s, err := strconv.Unquote(e.Value); err == nil && e.Kind == token.STRING {
			return s, true
		}
	case *ast.ParenExpr:
		return sqlText(e.X, vars)
	case *ast.BinaryExpr:
		if e.Op == token.ADD {
			x, okx := sqlText(e.X, vars)
			y, oky := sqlText(e.Y, vars)
			return x + y, okx || oky
		}
	case *ast.Ident:
		if v, found := vars[e.Name]; found && v != nil {
			return sqlText(v, vars)
		}
	case *ast.CallExpr:
		if f, isName := e.Fun.(*ast.Ident); isName && vars[f.Name+"()"] != nil {
			return sqlText(vars[f.Name+"()"], vars)
		}
	}
	return " ? ", false
}

// assignedOnce maps the names assigned exactly once under n (a function,
// or the package's constants) to their value; names assigned again map
// to nil.
func assignedOnce(n ast.Node, into map[string]ast.Expr) {
	set := func(id *ast.Ident, v ast.Expr) {
		if _, seen := into[id.Name]; seen {
			into[id.Name] = nil
			return
		}
		into[id.Name] = v
	}
	ast.Inspect(n, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			for i, l := range n.Lhs {
				if id, ok := l.(*ast.Ident); ok && len(n.Rhs) == len(n.Lhs) {
					set(id, n.Rhs[i])
				} else if ok {
					set(id, nil)
				}
			}
		case *ast.ValueSpec:
			for i, id := range n.Names {
				if i < len(n.Values) {
					set(id, n.Values[i])
				}
			}
		}
		return true
	})
}

// TestSQLTextOnlyWhereTheRuleAllows reads the package's source and fails
// on SQL text passed to Exec or Raw that says nothing beyond what a gorm
// chain on one table says plainly: such a statement is written as a chain.
func TestSQLTextOnlyWhereTheRuleAllows(t *testing.T) {
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	consts := map[string]ast.Expr{}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				if d.Tok == token.CONST {
					assignedOnce(d, consts)
				}
			case *ast.FuncDecl:
				if d.Recv == nil && d.Body != nil && len(d.Body.List) == 1 {
					if r, ok := d.Body.List[0].(*ast.ReturnStmt); ok && len(r.Results) == 1 {
						consts[d.Name.Name+"()"] = r.Results[0]
					}
				}
			}
		}
	}
	checked := 0
	for _, f := range files {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			vars := map[string]ast.Expr{}
			for k, v := range consts {
				vars[k] = v
			}
			assignedOnce(fn.Body, vars)
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) == 0 {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || (sel.Sel.Name != "Exec" && sel.Sel.Name != "Raw") {
					return true
				}
				text, ok := sqlText(call.Args[0], vars)
				if !ok {
					return true
				}
				checked++
				if plainSQL(text) {
					t.Errorf("%s (%s): SQL text a gorm chain says plainly (see doc.go): %s",
						fset.Position(call.Pos()), fn.Name.Name, strings.Join(strings.Fields(text), " "))
				}
				return true
			})
		}
	}
	if checked < 50 {
		t.Errorf("checked %d statements; the parser no longer finds the package's SQL", checked)
	}
}

// TestPlainSQL pins what the guard above tells apart.
func TestPlainSQL(t *testing.T) {
	for _, c := range []struct {
		sql   string
		plain bool
	}{
		{"UPDATE feeds SET title = ? WHERE id = ?", true},
		{"SELECT id, balance FROM users WHERE id IN ? ORDER BY id", true},
		{"DELETE FROM digests WHERE id = ? AND user_id = ?", true},
		{"UPDATE users SET soft_bounces = soft_bounces + 1 WHERE id = ?", false},
		{"UPDATE feed_owners SET notified_seq = lapse_seq WHERE feed_id = ?", false},
		{"UPDATE feeds SET websub_no_lease = TRUE, updated_at = ? WHERE id = ?", true},
		{"UPDATE outbox SET state = ?, lease_until = NULL WHERE id = ?", true},
		{"UPDATE outbox SET state = ? WHERE id IN ? AND lease_owner = ?", false},
		{"SELECT state, COUNT(*) AS n FROM outbox GROUP BY state", false},
		{"DELETE FROM mail_events WHERE id IN (SELECT id FROM mail_events LIMIT ?)", false},
		{"INSERT INTO hosts (host) VALUES (?) ON CONFLICT (host) DO NOTHING", false},
		{"UPDATE outbox SET credits = t.credits FROM digest_issues t WHERE outbox.issue_id = t.id", false},
		{"SELECT a.x FROM a JOIN b ON b.id = a.b_id", false},
		{"UPDATE feeds SET x = CASE WHEN y THEN 1 ELSE 2 END", false},
	} {
		if got := plainSQL(c.sql); got != c.plain {
			t.Errorf("plainSQL(%q) = %v, want %v", c.sql, got, c.plain)
		}
	}
}
