package opml

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestFolder: every .opml file of the folder is yielded once (more than a
// step of names), named without its extension, with its feeds or its
// error; other files, hidden ones and folders are passed over; a folder
// that cannot be read is an error.
func TestFolder(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	const good = 300
	for i := range good {
		write(fmt.Sprintf("r%d@mail.org.opml", i), fmt.Sprintf(`<opml><body><outline xmlUrl="https://f.org/%d"/></body></opml>`, i))
	}
	write("BAD@mail.org.OPML", "not opml")
	write("notes.txt", "x")
	write(".hidden.opml", `<opml><body><outline xmlUrl="https://f.org/h"/></body></opml>`)
	if err := os.Mkdir(filepath.Join(dir, "sub.opml"), 0o700); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for l, err := range Folder(dir) {
		if err != nil {
			t.Fatal(err)
		}
		if seen[l.Name] {
			t.Errorf("%s yielded twice", l.Name)
		}
		seen[l.Name] = true
		switch {
		case l.Name == "BAD@mail.org":
			if !errors.Is(l.Err, ErrNotOPML) {
				t.Errorf("bad file: %v, want ErrNotOPML", l.Err)
			}
		case l.Err != nil || len(l.Outlines) != 1 || l.Path != filepath.Join(dir, l.Name+".opml"):
			t.Errorf("%s: %+v", l.Name, l)
		}
	}
	if len(seen) != good+1 {
		t.Errorf("%d lists yielded, want %d", len(seen), good+1)
	}
	for _, err := range Folder(filepath.Join(dir, "missing")) {
		if err == nil {
			t.Error("a missing folder yielded no error")
		}
	}
}
