package postfixtest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	netmail "net/mail"
	"net/textproto"
	"strings"
)

// dsn is what the tests read out of a delivery status notification.
type dsn struct {
	Header     netmail.Header
	ReportType string
	PerMessage textproto.MIMEHeader
	Recipients []textproto.MIMEHeader
	// Returned is the header of the returned original (message/rfc822 or
	// text/rfc822-headers part), nil when none came back.
	Returned netmail.Header
	// ReturnedType is that part's content type.
	ReturnedType string
}

// parseDSN reads an RFC 3464 report: a multipart/report whose second part
// is message/delivery-status and whose optional third part is the original
// message or its header.
func parseDSN(raw []byte) (*dsn, error) {
	msg, err := netmail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("message: %w", err)
	}
	mt, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		return nil, fmt.Errorf("content type: %w", err)
	}
	if mt != "multipart/report" {
		return nil, fmt.Errorf("content type %s, want multipart/report", mt)
	}
	d := &dsn{Header: msg.Header, ReportType: params["report-type"]}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("part: %w", err)
		}
		pt, _, _ := mime.ParseMediaType(part.Header.Get("Content-Type"))
		body, err := io.ReadAll(part)
		if err != nil {
			return nil, fmt.Errorf("part %s: %w", pt, err)
		}
		switch pt {
		case "message/delivery-status":
			if err := d.readStatus(body); err != nil {
				return nil, err
			}
		case "message/rfc822", "text/rfc822-headers":
			if !bytes.Contains(body, []byte("\r\n\r\n")) && !bytes.Contains(body, []byte("\n\n")) {
				body = append(body, "\r\n"...)
			}
			orig, err := netmail.ReadMessage(bytes.NewReader(body))
			if err != nil {
				return nil, fmt.Errorf("returned message: %w", err)
			}
			d.Returned, d.ReturnedType = orig.Header, pt
		}
	}
	if d.PerMessage == nil {
		return nil, errors.New("no message/delivery-status part")
	}
	return d, nil
}

// readStatus splits a delivery-status body into its per-message block and
// one block per recipient.
func (d *dsn) readStatus(body []byte) error {
	r := textproto.NewReader(bufio.NewReader(bytes.NewReader(body)))
	for {
		h, err := r.ReadMIMEHeader()
		if len(h) > 0 {
			if d.PerMessage == nil {
				d.PerMessage = h
			} else {
				d.Recipients = append(d.Recipients, h)
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("delivery-status: %w", err)
		}
	}
}

// addressField returns the address of a field like "rfc822; a@b".
func addressField(v string) string {
	if _, addr, ok := strings.Cut(v, ";"); ok {
		return strings.TrimSpace(addr)
	}
	return strings.TrimSpace(v)
}
