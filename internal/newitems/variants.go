package newitems

import (
	"net/url"
	"path"
	"strings"

	ext "github.com/mmcdole/gofeed/extensions"
)

// One medium, one enclosure. Feeds list the same episode several times:
// an RSS <enclosure> and a <media:content> of the same file, a
// <media:group> of encodings (Media RSS: "effectively the same content,
// yet different representations"), the mp3 and the ogg of one episode.
// The reader wants one link per thing to play or read, so variants of a
// medium already listed are dropped here.

// minPlausibleLength is the least byte count taken as a file's size; feeds
// write 0, 1 or 123 where they do not know it.
const minPlausibleLength = 1000

// fileKind is the broad kind of a media file for telling variants apart:
// "audio", "video" or "" for anything else (documents are never variants).
func fileKind(e Enclosure) string {
	t := e.Type
	switch {
	case strings.HasPrefix(t, "audio"):
		return "audio"
	case strings.HasPrefix(t, "video"):
		return "video"
	}
	switch strings.ToLower(path.Ext(urlPath(e.URL))) {
	case ".mp3", ".m4a", ".ogg", ".opus", ".aac", ".flac", ".wav":
		return "audio"
	case ".mp4", ".m4v", ".webm", ".mov":
		return "video"
	}
	return ""
}

// urlPath is the path of u ("" when it does not parse).
func urlPath(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	return p.Path
}

// fileStem is u's host and path without the file extension, lower-cased:
// ep1.mp3 and ep1.ogg on one host share it.
func fileStem(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Path == "" || p.Path == "/" {
		return ""
	}
	return strings.ToLower(p.Host + strings.TrimSuffix(p.Path, path.Ext(p.Path)))
}

// variantOf returns the index in s of an enclosure e is a variant of: the
// same URL but for the query, or the same kind (audio, video) and the same
// file but for its extension; -1 when e is a medium of its own.
func (s *enclosureSet) variantOf(e Enclosure) int {
	kind, stem := fileKind(e), fileStem(e.URL)
	for i, have := range s.list {
		if have.URL == e.URL {
			return i
		}
		if kind != "" && stem != "" && fileKind(have) == kind && fileStem(have.URL) == stem {
			return i
		}
	}
	return -1
}

// addVariant adds e unless it is a variant of an enclosure already listed;
// then that one takes e's size or duration where it lacks a plausible one.
func (s *enclosureSet) addVariant(e Enclosure) {
	i := s.variantOf(e)
	if i < 0 {
		s.add(e)
		return
	}
	s.fill(i, e)
}

// fill gives s.list[i] what e knows that it does not (a duration, a
// plausible size, a type) when e is the same file (same URL but for the
// query); another encoding's size is not this file's.
func (s *enclosureSet) fill(i int, e Enclosure) {
	have := &s.list[i]
	if strings.SplitN(have.URL, "?", 2)[0] != strings.SplitN(e.URL, "?", 2)[0] {
		return
	}
	if have.Duration == 0 {
		have.Duration = e.Duration
	}
	if have.Length < minPlausibleLength && e.Length >= minPlausibleLength {
		have.Length = e.Length
	}
	if have.Type == "" {
		have.Type = e.Type
	}
}

// addGroup adds the files of one <media:group> as one medium: nothing when
// one of them is listed already (the group is that enclosure's medium, and
// fills in what it lacks), else the group's default (isDefault="true"), or
// its first video, or its first file. It returns the group's first image
// and web player, as addContents does.
func (s *enclosureSet) addGroup(base *url.URL, contents []ext.Extension) (imageContent, playerContent string) {
	var files []Enclosure
	pick := -1
	for _, c := range contents {
		e, image, player := contentFile(base, c)
		switch {
		case image != "":
			imageContent = firstNonEmpty(imageContent, image)
		case player != "":
			playerContent = firstNonEmpty(playerContent, player)
		case e.URL != "":
			if strings.EqualFold(strings.TrimSpace(c.Attrs["isDefault"]), "true") && pick < 0 {
				pick = len(files)
			}
			files = append(files, e)
		}
	}
	for _, e := range files {
		if i := s.variantOf(e); i >= 0 {
			for _, v := range files {
				if s.variantOf(v) == i {
					s.fill(i, v)
				}
			}
			return imageContent, playerContent
		}
	}
	for i, e := range files {
		if pick < 0 && fileKind(e) == "video" {
			pick = i
		}
	}
	if pick < 0 && len(files) > 0 {
		pick = 0
	}
	if pick >= 0 {
		s.add(files[pick])
	}
	return imageContent, playerContent
}
