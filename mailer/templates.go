package mailer

import (
	"errors"
	"fmt"
	htmltemplate "html/template"
	"io/fs"
	"strings"
	"sync"
	texttemplate "text/template"

	"github.com/feedmail/feedmail/templates"
)

// Templates is the parsed set of email templates: html/template for the HTML
// parts and text/template for the text parts. It is immutable once parsed and
// safe for concurrent use.
type Templates struct {
	html *htmltemplate.Template
	text *texttemplate.Template
}

// requiredTemplates are the entry points composition executes.
var requiredTemplates = []string{"item", "digest", "notice"}

// LoadTemplates parses the email templates embedded in package templates.
// Parse once at start-up and share the result (a nil [Sender.Templates]
// uses a copy parsed once per process).
func LoadTemplates() (*Templates, error) {
	return ParseTemplates(templates.FS)
}

// ParseTemplates parses email/*.html and email/*.txt from fsys. It exists so
// tests and operators can try other templates; LoadTemplates is the usual
// entry point. Every one of item, digest and notice must exist in both forms.
func ParseTemplates(fsys fs.FS) (*Templates, error) {
	h, err := htmltemplate.New("email").Funcs(htmlFuncs).ParseFS(fsys, "email/*.html")
	if err != nil {
		return nil, fmt.Errorf("parse html email templates: %w", err)
	}
	t, err := texttemplate.New("email").Funcs(textFuncs).ParseFS(fsys, "email/*.txt")
	if err != nil {
		return nil, fmt.Errorf("parse text email templates: %w", err)
	}
	var missing []string
	for _, name := range requiredTemplates {
		if h.Lookup(name+".html") == nil {
			missing = append(missing, name+".html")
		}
		if t.Lookup(name+".txt") == nil {
			missing = append(missing, name+".txt")
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("email templates missing: %s", strings.Join(missing, ", "))
	}
	return &Templates{html: h, text: t}, nil
}

// defaultTemplates parses the embedded templates the first time a Sender
// without its own Templates composes a message. The result never changes.
var defaultTemplates = sync.OnceValues(LoadTemplates)

// htmlFuncs are the functions the HTML templates may call. The Outlook ghost
// table lives here because html/template strips comments from template text,
// and conditional comments are the only way to give Outlook for Windows
// (which ignores max-width) a fixed 640px column.
var htmlFuncs = htmltemplate.FuncMap{
	"msoOpen": func() htmltemplate.HTML {
		return `<!--[if mso]><table role="presentation" width="640" align="center" cellpadding="0" cellspacing="0" border="0" style="width:640px;"><tr><td style="background-color:#ffffff;"><![endif]-->`
	},
	"msoClose": func() htmltemplate.HTML {
		return `<!--[if mso]></td></tr></table><![endif]-->`
	},
}

// textFuncs are the functions the text templates may call.
var textFuncs = texttemplate.FuncMap{
	// indent prefixes every non-empty line of s with prefix.
	"indent": func(s, prefix string) string {
		lines := strings.Split(s, "\n")
		for i, l := range lines {
			if l != "" {
				lines[i] = prefix + l
			}
		}
		return strings.Join(lines, "\n")
	},
}

// templateHTMLSize and templateTextSize are about what the templates add
// around the content they are given.
const (
	templateHTMLSize = 8 << 10
	templateTextSize = 2 << 10
)

// render executes the HTML and text forms of the template called name.
// The parts are written into buffers of at least htmlSize and textSize
// bytes plus the templates' own markup, so that a large body is not
// copied over and over as they grow.
func (t *Templates) render(name string, data any, htmlSize, textSize int) (htmlPart, textPart string, err error) {
	if t == nil || t.html == nil || t.text == nil {
		return "", "", errors.New("mailer: templates not loaded")
	}
	var hb, tb strings.Builder
	hb.Grow(htmlSize + templateHTMLSize)
	tb.Grow(textSize + templateTextSize)
	if err := t.html.ExecuteTemplate(&hb, name+".html", data); err != nil {
		return "", "", fmt.Errorf("render %s.html: %w", name, err)
	}
	if err := t.text.ExecuteTemplate(&tb, name+".txt", data); err != nil {
		return "", "", fmt.Errorf("render %s.txt: %w", name, err)
	}
	return hb.String(), tidyText(tb.String()), nil
}

// tidyText normalises a rendered text part: no trailing blanks on lines
// (except the "-- " signature separator, whose space is meaningful), at most
// one empty line in a row, no leading or trailing empty lines, one final
// newline.
func tidyText(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	lines := strings.Split(s, "\n")
	out := make([]string, 0, len(lines))
	blank := 0
	for _, l := range lines {
		if l != "-- " {
			l = strings.TrimRight(l, " \t")
		}
		if l == "" {
			blank++
			if blank > 1 || len(out) == 0 {
				continue
			}
		} else {
			blank = 0
		}
		out = append(out, l)
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return strings.Join(out, "\n") + "\n"
}
