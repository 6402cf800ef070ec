// Package newitems turns a fetched feed document into items and decides which
// of the new ones are delivered. It never talks to the network: the poller
// fetches, newitems parses and selects.
//
//   - Decode converts a document to UTF-8 (byte order marks, UTF-16/32, the
//     XML declaration, the HTTP charset), so that gofeed sees one encoding.
//   - Parse reads RSS, Atom and JSON Feed with gofeed (Parser.Parse, never
//     ParseURL), gives each item an identity (GUID → link → hash of title and
//     content), makes links absolute and finds the WebSub hub and self links.
//   - Discover and DiscoverHub read feed and hub links from an HTML page.
//   - Select applies the ignore rules of DESIGN.md ("New items"). It is a pure
//     function of its inputs and the time it is given.
//
// Recording a feed's first successful poll as "all seen, nothing mailed" is
// the caller's job: Select only judges items the caller calls new.
//
// # Choices where DESIGN.md is silent
//
//   - Encoding: a byte order mark beats everything; then the XML declaration;
//     then the HTTP charset; then UTF-8, or windows-1252 when undeclared bytes
//     are not UTF-8. See Decode.
//   - The 1,000 items looked at are the first 1,000 in document order.
//   - Items repeating an identity within one document are dropped (the first
//     is kept).
//   - Identity is a 64-digit hex SHA-256 over "g:"+guid, "l:"+link or
//     "h:"+title+NUL+content; the GUID is compared exactly after trimming.
//   - Links resolving to anything but http(s) (javascript:, data:) are
//     dropped; a relative link with no feed URL to resolve it is kept as is.
//   - Titles: entities decoded, white space folded (they become mail
//     subjects); markup is not stripped.
//   - Ignore rules: one year is 365 × 24 h; all limits are strict ("older
//     than", "more than"), so an item exactly at a limit is delivered; the
//     first applicable rule is reported. See Select.
//   - Hub/self links are read from the feed header only (before the first
//     item). Discover reads the HTML head only.
package newitems
