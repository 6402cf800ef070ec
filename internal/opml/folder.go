package opml

import (
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"strings"
)

// FolderList is one list of a folder of lists (one OPML file per person):
// the file's name without its .opml extension, its path, and its feeds or
// why they could not be read.
type FolderList struct {
	Name, Path string
	Outlines   []Outline
	Err        error
}

// folderStep is how many names Folder reads from the folder at a time.
const folderStep = 256

// Folder yields the lists of dir's *.opml files (any case of the
// extension; other files, folders and names starting with a dot are
// passed over) in the folder's own order, reading a few hundred names at
// a time so that memory stays flat however many files it holds. A file
// that cannot be opened or parsed comes with its Err (Parse's errors); an
// error reading the folder itself is yielded last.
func Folder(dir string) iter.Seq2[FolderList, error] {
	return func(yield func(FolderList, error) bool) {
		d, err := os.Open(dir)
		if err != nil {
			yield(FolderList{}, fmt.Errorf("open folder of lists: %w", err))
			return
		}
		defer d.Close()
		for {
			ents, err := d.ReadDir(folderStep)
			for _, ent := range ents {
				name := ent.Name()
				ext := filepath.Ext(name)
				if ent.IsDir() || strings.HasPrefix(name, ".") || !strings.EqualFold(ext, ".opml") {
					continue
				}
				path := filepath.Join(dir, name)
				outs, perr := parseFile(path)
				if !yield(FolderList{Name: strings.TrimSuffix(name, ext), Path: path, Outlines: outs, Err: perr}, nil) {
					return
				}
			}
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				yield(FolderList{}, fmt.Errorf("read folder of lists %s: %w", dir, err))
				return
			}
		}
	}
}

// parseFile parses the OPML file at path.
func parseFile(path string) ([]Outline, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Parse(f)
}
