package testutil

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// CorpusFile is one file of the third-party corpus.
type CorpusFile struct {
	Path string // relative to the corpus folder, with forward slashes
	Body []byte
}

// ReadCorpus returns every file under dir (a folder of the corpus, such as
// "opml"), in walk order. It fails the test when the folder cannot be read
// and skips (fails under CI) when the corpus is absent.
func ReadCorpus(t testing.TB, dir string) []CorpusFile {
	t.Helper()
	root := CorpusDir(t)
	var files []CorpusFile
	err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		files = append(files, CorpusFile{Path: filepath.ToSlash(rel), Body: body})
		return nil
	})
	if err != nil {
		t.Fatalf("reading corpus %s: %v", dir, err)
	}
	return files
}
