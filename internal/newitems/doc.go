// Package newitems turns a fetched feed document into items and decides which
// of the new ones are delivered: the input of the poller's routing decision.
//
//   - Decode converts a document to UTF-8 (byte order marks, UTF-16/32, the
//     XML declaration, the HTTP charset), so that gofeed sees one encoding.
//   - Parse reads RSS, Atom and JSON Feed with gofeed (Parser.Parse, never
//     ParseURL), gives each item an identity (GUID → link → hash of title and
//     content), makes links absolute and finds the WebSub hub and self links.
//   - Discover and DiscoverHub read feed and hub links from an HTML page.
//   - Select applies the ignore rules (docs/design.md, "New items"). It is a
//     pure function of its inputs and the time it is given.
//
// It must not talk to the network (the poller fetches), touch the store, or
// send mail. Recording a feed's first successful poll as "all seen, nothing
// mailed" is the caller's job: Select only judges items the caller calls new.
// The choices made where the design is silent (encodings, the 1,000-item
// window, identities, links, titles, limits) are listed in docs/design.md and
// at the functions that make them.
package newitems
