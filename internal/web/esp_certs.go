package web

import (
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/feedmail/feedmail/internal/esp"
)

// snsCerts fetches SNS signing certificates (esp.CertSource): only from a
// URL its check allows (https, an SNS host), at most maxCertBytes, never
// following a redirect, within the caller's deadline; and keeps each for
// certCacheTTL (or until it expires), at most maxCachedCerts of them. SNS
// signs with one certificate per region for months, so a busy endpoint
// fetches it about once a day.
type snsCerts struct {
	client *http.Client
	check  func(string) (*url.URL, error)
	now    func() time.Time

	mu    sync.Mutex
	cache map[string]cachedCert
}

type cachedCert struct {
	cert  *x509.Certificate
	until time.Time
}

const (
	maxCertBytes   = 64 << 10
	maxCachedCerts = 32
	certCacheTTL   = 24 * time.Hour
)

func newSNSCerts(client *http.Client, check func(string) (*url.URL, error), now func() time.Time) *snsCerts {
	return &snsCerts{client: client, check: check, now: now, cache: map[string]cachedCert{}}
}

// Certificate returns the certificate at certURL.
func (c *snsCerts) Certificate(ctx context.Context, certURL string) (*x509.Certificate, error) {
	u, err := c.check(certURL)
	if err != nil {
		return nil, err
	}
	now := c.now()
	c.mu.Lock()
	if e, ok := c.cache[certURL]; ok && now.Before(e.until) {
		c.mu.Unlock()
		return e.cert, nil
	}
	c.mu.Unlock()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("certificate URL answered %s", strings.TrimSpace(resp.Status))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxCertBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read certificate: %w", err)
	}
	if len(body) > maxCertBytes {
		return nil, fmt.Errorf("%w: certificate document over %d bytes", esp.ErrForged, maxCertBytes)
	}
	cert, err := esp.ParsePEMCertificate(body)
	if err != nil {
		return nil, err
	}
	until := now.Add(certCacheTTL)
	if cert.NotAfter.Before(until) {
		until = cert.NotAfter
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.cache) >= maxCachedCerts { // the one expiring first goes
		var first string
		var firstAt time.Time
		for k, e := range c.cache {
			if first == "" || e.until.Before(firstAt) {
				first, firstAt = k, e.until
			}
		}
		delete(c.cache, first)
	}
	c.cache[certURL] = cachedCert{cert: cert, until: until}
	return cert, nil
}
