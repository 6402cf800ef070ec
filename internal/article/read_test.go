package article_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/feedmail/feedmail/internal/article"
	"github.com/feedmail/feedmail/internal/fetcher"
	"github.com/feedmail/feedmail/internal/testkit/articletest"
)

func TestExtractKeepsTheArticleOnly(t *testing.T) {
	a, err := article.Extract([]byte(articletest.Page("Boats")), "https://news.example/posts/boats")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range articletest.Paragraphs {
		if !strings.Contains(a.HTML, p) {
			t.Errorf("article lacks paragraph %q:\n%s", p, a.HTML)
		}
	}
	if want := `src="https://news.example` + articletest.ImagePath + `"`; !strings.Contains(a.HTML, want) {
		t.Errorf("article lacks the absolute image %s:\n%s", want, a.HTML)
	}
	for _, n := range articletest.Noise {
		if strings.Contains(a.HTML, n) {
			t.Errorf("article keeps %q from around it:\n%s", n, a.HTML)
		}
	}
	if a.TextChars < article.MinTextChars {
		t.Errorf("TextChars = %d", a.TextChars)
	}
}

func TestExtractRefusesPagesWithoutArticle(t *testing.T) {
	for name, page := range map[string]string{
		"empty":       "",
		"login wall":  `<html><body><form><input name="user"><button>Sign in</button></form></body></html>`,
		"script only": `<html><body><div id="app"></div><script>render()</script></body></html>`,
	} {
		if _, err := article.Extract([]byte(page), "https://news.example/p"); !errors.Is(err, article.ErrNoArticle) {
			t.Errorf("%s: err = %v, want ErrNoArticle", name, err)
		}
	}
	if _, err := article.Extract([]byte(articletest.Page("x")), "/relative"); err == nil {
		t.Error("a relative page address was accepted")
	}
}

func TestReadFailsCleanly(t *testing.T) {
	srv := articletest.New()
	defer srv.Close()
	r := article.NewReader(fetcher.Config{BaseURL: "https://feedmail.example", AllowPrivate: true, Timeout: 2 * time.Second}, nil)
	ctx := context.Background()

	a, final, err := r.Read(ctx, srv.PostURL("ok"))
	if err != nil || !strings.Contains(a.HTML, articletest.Paragraphs[0]) || final != srv.PostURL("ok") {
		t.Fatalf("Read(ok) = %.80q, %q, %v", a.HTML, final, err)
	}
	for _, tc := range []struct{ name, reason string }{
		{"500", "answered 500"},
		{"404", "answered 404"},
		{"huge", "too large"},
		{"slow", "took too long"},
		{"robots", "robots.txt"},
	} {
		_, _, err := r.Read(ctx, srv.PostURL(tc.name))
		var f *article.Failure
		if !errors.As(err, &f) || !strings.Contains(f.Reason, tc.reason) {
			t.Errorf("Read(%s) = %v, want a Failure saying %q", tc.name, err, tc.reason)
		}
	}
	if _, _, err := r.Read(ctx, "mailto:x@example.com"); err == nil {
		t.Error("a mailto link was read")
	}
	guarded := article.NewReader(fetcher.Config{BaseURL: "https://feedmail.example"}, nil)
	if _, _, err := guarded.Read(ctx, srv.PostURL("ok")); err == nil {
		t.Error("the private-network guard let a loopback page through")
	}
}

// BenchmarkExtract measures reading the article out of the test page
// (about 2 KB of HTML).
func BenchmarkExtract(b *testing.B) {
	page := []byte(articletest.Page("Boats"))
	for b.Loop() {
		if _, err := article.Extract(page, "https://news.example/posts/boats"); err != nil {
			b.Fatal(err)
		}
	}
}
