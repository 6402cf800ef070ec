// Package templates embeds feedmail's templates and static assets so that the
// single binary carries everything it renders. It holds files only, no logic:
//
//   - email/  html/template (*.html) and text/template (*.txt) files for the
//     messages composed by package mailer (item, digest and notice emails).
//     Every file in it is parsed once by mailer.LoadTemplates.
//   - pages/  html/template files for the web package.
//   - static/ CSS, images and other assets served by the web package.
//
// The "all:" prefix keeps dot-files such as the .keep placeholders, so the
// folders exist in the embedded tree even before they hold anything.
package templates

import "embed"

// FS is the embedded tree: email/, pages/ and static/.
//
//go:embed all:email all:pages all:static
var FS embed.FS
