package mailer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/wneessen/go-mail"
)

// Maildir is a Transport that delivers into a Maildir folder (the default
// when no SMTP server is configured): each message is written to tmp/,
// synced to disk, then renamed into new/, so a reader never sees half a
// message. File names are "<seconds>.M<microseconds>P<pid>Q<counter>.<host>",
// unique per process and delivery. Files use LF line endings, as mail
// readers of Maildirs expect; the content is otherwise what SMTP would carry.
//
// Every failure to store is temporary (a full disk, a quota, a permission
// fixed by the operator): it is never the message's fault. A message that
// cannot be rendered at all is a permanent failure.
type Maildir struct {
	dir     string
	opts    options
	pid     int
	counter atomic.Uint64
}

// WithWriteFile replaces the function that creates and fills a new file in
// tmp/ (default: O_CREATE|O_EXCL, write, fsync, close). Tests use it to
// simulate a full disk.
func WithWriteFile(f func(path string, data []byte) error) Option {
	return func(o *options) { o.writeFile = f }
}

// WithHostname sets the host part of Maildir file names (default
// os.Hostname).
func WithHostname(h string) Option {
	return func(o *options) { o.hostname = h }
}

// NewMaildir creates dir and its tmp/, new/ and cur/ folders when missing.
func NewMaildir(dir string, opts ...Option) (*Maildir, error) {
	if strings.TrimSpace(dir) == "" {
		return nil, errors.New("maildir: empty path")
	}
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if o.writeFile == nil {
		o.writeFile = WriteFileSync
	}
	if o.hostname == "" {
		h, err := os.Hostname()
		if err != nil || h == "" {
			h = "localhost"
		}
		o.hostname = h
	}
	// '/' and ':' have meanings in Maildir names; escape them as the
	// Maildir convention does.
	o.hostname = strings.NewReplacer("/", `\057`, ":", `\072`).Replace(o.hostname)
	for _, sub := range []string{"tmp", "new", "cur"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			return nil, fmt.Errorf("maildir: %w", err)
		}
	}
	return &Maildir{dir: dir, opts: o, pid: os.Getpid()}, nil
}

// Dir returns the Maildir's folder.
func (d *Maildir) Dir() string { return d.dir }

// Send stores each message; see Transport.
func (d *Maildir) Send(ctx context.Context, msgs []*mail.Msg) []error {
	errs := make([]error, len(msgs))
	d.SendEach(ctx, msgs, func(i int, err error) { errs[i] = err })
	return errs
}

// SendEach stores msgs one by one and reports each result once its file
// is in new/ ([EachSender]).
func (d *Maildir) SendEach(ctx context.Context, msgs []*mail.Msg, report func(i int, err error)) {
	for i, m := range msgs {
		if err := ctx.Err(); err != nil {
			report(i, temporary(err, "maildir: not stored: %v", err))
			continue
		}
		report(i, d.deliver(m))
	}
}

// Close does nothing: a Maildir holds no resources between sends.
func (d *Maildir) Close() error { return nil }

func (d *Maildir) deliver(m *mail.Msg) error {
	raw, err := Render(m)
	if err != nil {
		return permanent(err, "maildir: %v", err)
	}
	raw = bytes.ReplaceAll(raw, []byte("\r\n"), []byte("\n"))
	// A delivery agent records the envelope sender as Return-Path; do the
	// same, so that what a reader's program sees is what SMTP would give.
	if from, err := m.GetSender(false); err == nil && from != "" {
		// go-mail gives the address in angle brackets already.
		from = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(from), "<"), ">")
		raw = append([]byte("Return-Path: <"+from+">\n"), raw...)
	}
	name := d.uniqueName()
	tmp := filepath.Join(d.dir, "tmp", name)
	if err := d.opts.writeFile(tmp, raw); err != nil {
		_ = os.Remove(tmp)
		return storeError(err)
	}
	if err := os.Rename(tmp, filepath.Join(d.dir, "new", name)); err != nil {
		_ = os.Remove(tmp)
		return storeError(err)
	}
	syncDir(filepath.Join(d.dir, "new"))
	return nil
}

// uniqueName returns time.MusecPpidQn.host.
func (d *Maildir) uniqueName() string {
	now := d.opts.clock.Now()
	n := d.counter.Add(1)
	return strconv.FormatInt(now.Unix(), 10) + ".M" + strconv.Itoa(now.Nanosecond()/1000) +
		"P" + strconv.Itoa(d.pid) + "Q" + strconv.FormatUint(n, 10) + "." + d.opts.hostname
}

// storeError classifies a storage failure: always temporary, with the
// cause kept (errors.Is(err, syscall.ENOSPC) for a full disk).
func storeError(err error) error {
	switch {
	case errors.Is(err, syscall.ENOSPC):
		return temporary(err, "maildir: disk full: %v", err)
	case errors.Is(err, syscall.EDQUOT):
		return temporary(err, "maildir: quota exceeded: %v", err)
	default:
		return temporary(err, "maildir: %v", err)
	}
}

// WriteFileSync creates path (which must not exist), writes data and
// syncs it to disk before closing. It is the default of WithWriteFile, so
// a replacement can wrap it.
func WriteFileSync(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// syncDir makes a rename durable; errors are ignored (some filesystems do
// not support syncing a directory).
func syncDir(dir string) {
	if f, err := os.Open(dir); err == nil {
		_ = f.Sync()
		_ = f.Close()
	}
}
