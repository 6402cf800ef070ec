package templates

import (
	"io/fs"
	"testing"
)

func TestEmbeddedTree(t *testing.T) {
	for _, dir := range []string{"email", "pages", "static"} {
		st, err := fs.Stat(FS, dir)
		if err != nil || !st.IsDir() {
			t.Errorf("%s/ missing from the embedded tree: %v", dir, err)
		}
	}
	for _, name := range []string{"item", "digest", "notice"} {
		for _, ext := range []string{".html", ".txt"} {
			if _, err := fs.Stat(FS, "email/"+name+ext); err != nil {
				t.Errorf("email/%s%s: %v", name, ext, err)
			}
		}
	}
}
