package mailer

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// TLSMode is how an SMTP connection is secured.
type TLSMode string

const (
	// TLSStartTLS connects in plain text and requires STARTTLS before
	// anything else (default; port 587).
	TLSStartTLS TLSMode = "starttls"
	// TLSImplicit speaks TLS from the first byte (port 465, "smtps").
	TLSImplicit TLSMode = "tls"
	// TLSNone never encrypts (port 25; for a local relay or tests).
	TLSNone TLSMode = "none"
)

// Limits on SMTP URL parameters.
const (
	defaultSMTPPool    = 4
	maxSMTPPool        = 64
	defaultSMTPTimeout = 30 * time.Second
)

// SMTPConfig is where and how to send mail over SMTP.
type SMTPConfig struct {
	Host     string
	Port     int
	Username string
	Password string
	TLS      TLSMode
	// Pool is the number of persistent connections (default 4).
	Pool int
	// Rate is the most messages per second over all connections; 0 means
	// unlimited. The token bucket holds one token (no bursts), so the
	// limit holds over any window.
	Rate float64
	// Timeout bounds dialing plus the greeting, and then each message
	// (default 30 s). A context deadline applies on top.
	Timeout time.Duration
}

// String describes the config without the password.
func (c SMTPConfig) String() string {
	u := url.URL{Scheme: "smtp", Host: net.JoinHostPort(c.Host, strconv.Itoa(c.Port))}
	if c.Username != "" {
		u.User = url.User(c.Username)
	}
	q := url.Values{}
	q.Set("tls", string(c.TLS))
	if c.Pool != 0 {
		q.Set("pool", strconv.Itoa(c.Pool))
	}
	if c.Rate != 0 {
		q.Set("rate", strconv.FormatFloat(c.Rate, 'g', -1, 64))
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// ParseSMTPURL parses FEEDMAIL_SMTP_URL:
//
//	smtp://user:pass@host:port?tls=starttls|tls|none&pool=N&rate=R&timeout=D
//
// tls defaults to starttls ("smtps://" means tls); the port defaults to 587
// for starttls, 465 for tls and 25 for none; pool defaults to 4 (1–64); rate
// is messages per second (a positive number, fractions allowed; absent =
// unlimited); timeout is a Go duration (default 30s). User and password are
// URL-decoded, so "%40" in a user name is "@". Unknown parameters are
// errors, so a typo cannot silently turn TLS off. With a user name the
// transport authenticates with PLAIN, LOGIN or CRAM-MD5, whichever the
// server offers first in that order; PLAIN and LOGIN are refused over
// tls=none unless the server is on loopback.
func ParseSMTPURL(s string) (SMTPConfig, error) {
	var cfg SMTPConfig
	u, err := parseSMTPAddress(s, &cfg)
	if err != nil {
		return cfg, err
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return cfg, fmt.Errorf("smtp url: query: %w", err)
	}
	for key, vals := range q {
		if len(vals) != 1 {
			return cfg, fmt.Errorf("smtp url: parameter %q given %d times", key, len(vals))
		}
		if err := setSMTPParam(&cfg, u.Scheme, key, strings.TrimSpace(vals[0])); err != nil {
			return cfg, err
		}
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return cfg, fmt.Errorf("smtp url: port %q out of range", p)
		}
		cfg.Port = n
	}
	cfg = cfg.withDefaults()
	return cfg, nil
}

// parseSMTPAddress parses s as a URL and reads its scheme (the TLS mode it
// implies), host and credentials into cfg. It returns the URL for its query
// and port, or an error naming what is wrong.
func parseSMTPAddress(s string, cfg *SMTPConfig) (*url.URL, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("smtp url: empty")
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("smtp url: %w", redactURLError(err))
	}
	switch strings.ToLower(u.Scheme) {
	case "smtp":
		cfg.TLS = TLSStartTLS
	case "smtps":
		cfg.TLS = TLSImplicit
	case "":
		return nil, errors.New("smtp url: missing scheme, want smtp://host:port")
	default:
		return nil, fmt.Errorf("smtp url: scheme %q not supported, want smtp or smtps", u.Scheme)
	}
	if u.Opaque != "" {
		return nil, errors.New("smtp url: want smtp://host:port (missing //)")
	}
	if u.Path != "" && u.Path != "/" {
		return nil, fmt.Errorf("smtp url: unexpected path %q", u.Path)
	}
	cfg.Host = u.Hostname()
	if cfg.Host == "" {
		return nil, errors.New("smtp url: missing host")
	}
	if u.User != nil {
		cfg.Username = u.User.Username()
		cfg.Password, _ = u.User.Password()
	}
	return u, nil
}

// setSMTPParam applies one query parameter (key=v) of a URL with scheme to
// cfg. Unknown keys and out-of-range values are errors.
func setSMTPParam(cfg *SMTPConfig, scheme, key, v string) error {
	switch key {
	case "tls":
		mode := TLSMode(strings.ToLower(v))
		switch mode {
		case TLSStartTLS, TLSImplicit, TLSNone:
		default:
			return fmt.Errorf("smtp url: tls=%q, want starttls, tls or none", v)
		}
		if strings.EqualFold(scheme, "smtps") && mode != TLSImplicit {
			return fmt.Errorf("smtp url: smtps:// contradicts tls=%s", v)
		}
		cfg.TLS = mode
	case "pool":
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxSMTPPool {
			return fmt.Errorf("smtp url: pool=%q, want a whole number from 1 to %d", v, maxSMTPPool)
		}
		cfg.Pool = n
	case "rate":
		r, err := strconv.ParseFloat(v, 64)
		if err != nil || !(r > 0) || r > 1e6 {
			return fmt.Errorf("smtp url: rate=%q, want messages per second > 0", v)
		}
		cfg.Rate = r
	case "timeout":
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("smtp url: timeout=%q, want a duration such as 30s", v)
		}
		cfg.Timeout = d
	default:
		return fmt.Errorf("smtp url: unknown parameter %q (known: tls, pool, rate, timeout)", key)
	}
	return nil
}

// redactURLError keeps a password out of url.Parse errors, which quote the
// whole input.
func redactURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s", ue.Err)
	}
	return err
}

// withDefaults fills the zero fields.
func (c SMTPConfig) withDefaults() SMTPConfig {
	if c.TLS == "" {
		c.TLS = TLSStartTLS
	}
	if c.Port == 0 {
		switch c.TLS {
		case TLSImplicit:
			c.Port = 465
		case TLSNone:
			c.Port = 25
		default:
			c.Port = 587
		}
	}
	if c.Pool <= 0 {
		c.Pool = defaultSMTPPool
	}
	if c.Pool > maxSMTPPool {
		c.Pool = maxSMTPPool
	}
	if c.Timeout <= 0 {
		c.Timeout = defaultSMTPTimeout
	}
	return c
}
