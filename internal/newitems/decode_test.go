package newitems

import (
	"bytes"
	"testing"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/encoding/unicode/utf32"
)

func encode(t *testing.T, e encoding.Encoding, s string) []byte {
	t.Helper()
	b, err := e.NewEncoder().Bytes([]byte(s))
	if err != nil {
		t.Fatalf("encoding test input: %v", err)
	}
	return b
}

func TestDecode(t *testing.T) {
	const wide = `<?xml version="1.0" encoding="utf-16"?><rss><channel><title>Café ✓ 𝄞</title></channel></rss>`
	const wideOut = `<?xml version="1.0" encoding="UTF-8"?><rss><channel><title>Café ✓ 𝄞</title></channel></rss>`
	const plain = `<rss><channel><title>Café</title></channel></rss>`
	latin1 := func(s string) []byte { return encode(t, charmap.ISO8859_1, s) }

	tests := []struct {
		name        string
		body        []byte
		contentType string
		want        string
	}{
		{"utf-8 unchanged", []byte(plain), "", plain},
		{"utf-8 declaration kept", []byte(`<?xml version="1.0" encoding="UTF-8"?>` + plain), "", `<?xml version="1.0" encoding="UTF-8"?>` + plain},
		{"utf-8 declaration normalised", []byte(`<?xml version="1.0" encoding="utf8"?>` + plain), "", `<?xml version="1.0" encoding="UTF-8"?>` + plain},
		{"utf-8 bom removed", append([]byte{0xEF, 0xBB, 0xBF}, plain...), "", plain},
		{"utf-16le bom", encode(t, unicode.UTF16(unicode.LittleEndian, unicode.UseBOM), wide), "", wideOut},
		{"utf-16be bom", encode(t, unicode.UTF16(unicode.BigEndian, unicode.UseBOM), wide), "", wideOut},
		{"utf-16le no bom", encode(t, unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM), wide), "", wideOut},
		{"utf-16be no bom", encode(t, unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM), wide), "", wideOut},
		{"utf-32le bom", encode(t, utf32.UTF32(utf32.LittleEndian, utf32.UseBOM), wide), "", wideOut},
		{"utf-32be bom", encode(t, utf32.UTF32(utf32.BigEndian, utf32.UseBOM), wide), "", wideOut},
		{"utf-32le no bom", encode(t, utf32.UTF32(utf32.LittleEndian, utf32.IgnoreBOM), wide), "", wideOut},
		{"utf-32be no bom", encode(t, utf32.UTF32(utf32.BigEndian, utf32.IgnoreBOM), wide), "", wideOut},
		{"utf-16 bom beats http charset", encode(t, unicode.UTF16(unicode.LittleEndian, unicode.UseBOM), wide), "text/xml; charset=iso-8859-1", wideOut},
		{"utf-16 json", encode(t, unicode.UTF16(unicode.LittleEndian, unicode.UseBOM), `{"title":"é"}`), "", `{"title":"é"}`},
		{
			"declared iso-8859-1",
			latin1(`<?xml version="1.0" encoding="iso-8859-1"?><rss><title>Café</title></rss>`), "",
			`<?xml version="1.0" encoding="UTF-8"?><rss><title>Café</title></rss>`,
		},
		{
			"declaration in single quotes with spaces",
			latin1(`<?xml version='1.0' encoding = 'ISO-8859-1' ?><rss><title>Café</title></rss>`), "",
			`<?xml version='1.0' encoding = 'UTF-8' ?><rss><title>Café</title></rss>`,
		},
		{
			"declaration beats http charset",
			latin1(`<?xml version="1.0" encoding="iso-8859-1"?><rss><title>Café</title></rss>`), "text/xml; charset=utf-8",
			`<?xml version="1.0" encoding="UTF-8"?><rss><title>Café</title></rss>`,
		},
		{
			"http charset koi8-r when undeclared",
			encode(t, charmap.KOI8R, `<?xml version="1.0"?><rss><title>Привет</title></rss>`), "application/rss+xml; charset=koi8-r",
			`<?xml version="1.0"?><rss><title>Привет</title></rss>`,
		},
		{
			"http charset with spaces and quotes",
			encode(t, charmap.Windows1252, `<rss><title>don’t</title></rss>`), `text/xml;charset= "windows-1252"`,
			`<rss><title>don’t</title></rss>`,
		},
		{
			"http charset single quotes, capitalised name",
			latin1(`<rss><title>Café</title></rss>`), `application/xml; Charset='ISO-8859-1'`,
			`<rss><title>Café</title></rss>`,
		},
		{
			"bogus http parameter ignored",
			[]byte(`<rss><title>Café</title></rss>`), `text/xml; charset:iso-8859-1`,
			`<rss><title>Café</title></rss>`,
		},
		{
			"unknown declared encoding falls back to http charset",
			latin1(`<?xml version="1.0" encoding="bogus"?><rss><title>Café</title></rss>`), "text/xml; charset=iso-8859-1",
			`<?xml version="1.0" encoding="UTF-8"?><rss><title>Café</title></rss>`,
		},
		{
			"declared utf-16 on 8-bit bytes is ignored",
			[]byte(`<?xml version="1.0" encoding="utf-16"?><rss><title>Café</title></rss>`), "",
			`<?xml version="1.0" encoding="UTF-8"?><rss><title>Café</title></rss>`,
		},
		{
			"undeclared invalid utf-8 read as windows-1252",
			[]byte("<rss><title>don\x92t</title></rss>"), "",
			`<rss><title>don’t</title></rss>`,
		},
		{
			"declared utf-8 with invalid bytes gets U+FFFD",
			[]byte("<?xml version=\"1.0\" encoding=\"utf-8\"?><rss><title>Espa\xf1a</title></rss>"), "",
			"<?xml version=\"1.0\" encoding=\"UTF-8\"?><rss><title>Espa\uFFFDa</title></rss>",
		},
		{
			"json ignores a wrong http charset",
			[]byte(`{"title":"Café"}`), "application/feed+json; charset=iso-8859-1",
			`{"title":"Café"}`,
		},
		{
			"gb2312 declared",
			[]byte("<?xml version=\"1.0\" encoding=\"gb2312\"?><rss><title>\xc4\xe3\xba\xc3</title></rss>"), "",
			`<?xml version="1.0" encoding="UTF-8"?><rss><title>你好</title></rss>`,
		},
		{"c1 controls demoronized", []byte("<rss><title>don\u0092t \u0081</title></rss>"), "", "<rss><title>don’t \u0081</title></rss>"},
		{"empty", nil, "text/xml; charset=utf-16", ""},
		{"three bytes", []byte("<a>"), "", "<a>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decode(tt.body, tt.contentType)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if string(got) != tt.want {
				t.Errorf("Decode =\n %q\nwant\n %q", got, tt.want)
			}
		})
	}
}

// TestDecodeThenParseWide checks the point of Decode: gofeed cannot read
// UTF-16/32 on its own, but can after Decode.
func TestDecodeThenParseWide(t *testing.T) {
	src := `<?xml version="1.0" encoding="utf-16"?><rss version="2.0"><channel><title>Ünïcode</title>` +
		`<item><title>Eins</title><guid>1</guid></item></channel></rss>`
	for _, e := range []encoding.Encoding{
		unicode.UTF16(unicode.LittleEndian, unicode.UseBOM),
		unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM),
		utf32.UTF32(utf32.LittleEndian, utf32.IgnoreBOM),
		utf32.UTF32(utf32.BigEndian, utf32.UseBOM),
	} {
		body := encode(t, e, src)
		f, err := Parse(body, "", "https://example.com/feed")
		if err != nil {
			t.Fatalf("%v: Parse: %v", e, err)
		}
		if f.Title != "Ünïcode" || len(f.Items) != 1 || f.Items[0].Title != "Eins" {
			t.Errorf("%v: got title %q, %d items", e, f.Title, len(f.Items))
		}
	}
}

func TestHTTPCharset(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"text/xml", ""},
		{"text/xml; charset=UTF-8", "UTF-8"},
		{`text/xml;charset= "us-ascii"`, "us-ascii"},
		{"application/xml;charset = us-ascii", "us-ascii"},
		{"application/atom+xml;charset='gb2312'", "gb2312"},
		{"text/xml; qs=0.9", ""},
		{"text/xml; charset:iso-8859-1", ""},
		{"text/xml; q=1; CHARSET=koi8-r ; foo=bar", "koi8-r"},
	}
	for _, tt := range tests {
		if got := httpCharset(tt.in); got != tt.want {
			t.Errorf("httpCharset(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestCorpusEncodingHeaders reads the feedparser encoding cases whose
// charset is given only in the HTTP header of their comment, and checks that
// the non-ASCII title of each comes out right.
func TestCorpusEncodingHeaders(t *testing.T) {
	files := loadCorpus(t, "feedparser/tests/encoding", "feedparser/tests/illformed/chardet")
	withHeader := 0
	for _, cf := range files {
		if cf.contentType != "" {
			withHeader++
		}
		doc, err := Decode(cf.body, cf.contentType)
		if err != nil {
			t.Errorf("%s: %v", cf.path, err)
			continue
		}
		if bytes.Contains(doc, []byte("\x00")) {
			t.Errorf("%s: NUL bytes left after decoding", cf.path)
		}
	}
	t.Logf("%d files, %d with an HTTP Content-Type in their header comment", len(files), withHeader)
	if withHeader < 40 {
		t.Errorf("only %d files with a Content-Type header found", withHeader)
	}
	// Cases whose expectation names a decoded string.
	checks := map[string]struct{ where, want string }{
		"feedparser/tests/encoding/euc-kr.xml":       {"feed", "\ub144"},
		"feedparser/tests/encoding/demoronize-1.xml": {"summary", "don\u2019t"},
		"feedparser/tests/encoding/demoronize-2.xml": {"summary", "don\u2019t"},
		"feedparser/tests/encoding/big5.xml":         {"", ""},
	}
	for _, cf := range files {
		c, ok := checks[cf.path]
		if !ok || c.where == "" {
			continue
		}
		f, err := Parse(cf.body, cf.contentType, "http://corpus.example/")
		if err != nil {
			t.Errorf("%s: %v", cf.path, err)
			continue
		}
		var got string
		switch c.where {
		case "feed":
			got = f.Title
		case "summary":
			if len(f.Items) > 0 {
				got = f.Items[0].Summary
			}
		}
		if got != c.want {
			t.Errorf("%s: got %q, want %q", cf.path, got, c.want)
		}
	}
}
