package mailer

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/wneessen/go-mail"
)

// Link is a button in a notice.
type Link struct {
	Label, URL string
}

// NoticeEmail is a free, plain notice to a person: confirmation, out of
// credits, feed gone or blacklisted. Text is plain text (paragraphs
// separated by an empty line); each Link becomes a button.
type NoticeEmail struct {
	To, Subject, Text string
	Links             []Link
	MessageID         string
	Date              time.Time
}

// noticeView is the data of the notice templates.
type noticeView struct {
	Title, To  string
	Text       string
	Paragraphs [][]string
	Links      []Link
}

// Notice composes a free notice. Subject and Text are required; every Link
// must be an http(s) URL.
func (s Sender) Notice(e NoticeEmail) (*mail.Msg, error) {
	tpl, err := s.templates()
	if err != nil {
		return nil, err
	}
	subject := cleanHeaderText(e.Subject, maxSubject)
	if subject == "" {
		return nil, errors.New("compose: notice Subject is required")
	}
	text := strings.TrimSpace(strings.ReplaceAll(e.Text, "\r\n", "\n"))
	var paras [][]string
	for _, p := range regexp.MustCompile(`\n[ \t]*\n`).Split(text, -1) {
		if p = strings.TrimSpace(p); p != "" {
			paras = append(paras, strings.Split(p, "\n"))
		}
	}
	var links []Link
	for _, l := range e.Links {
		u := bodyURL(l.URL, false)
		if u == "" {
			return nil, fmt.Errorf("compose: notice link %q: not an http(s) URL", l.URL)
		}
		label := cleanHeaderText(l.Label, 80)
		if label == "" {
			label = "Open"
		}
		links = append(links, Link{Label: label, URL: u})
	}
	view := noticeView{
		Title: subject, To: strings.TrimSpace(e.To),
		Text: text, Paragraphs: paras, Links: links,
	}
	htmlPart, textPart, err := tpl.render("notice", view, 0, 0)
	if err != nil {
		return nil, err
	}
	m, err := s.newMsg(e.To, "feedmail", subject, e.MessageID, e.Date)
	if err != nil {
		return nil, err
	}
	setBody(m, textPart, htmlPart)
	return m, nil
}
