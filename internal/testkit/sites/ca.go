package sites

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"sync"
	"time"
)

// authority is the test CA: one ECDSA key and self-signed certificate, and
// the leaf certificates it issued, one per host name (valid or expired).
type authority struct {
	key  *ecdsa.PrivateKey
	cert *x509.Certificate
	pool *x509.CertPool

	mu     sync.Mutex
	leaves map[string]*tls.Certificate // key: name, "!" prefix for expired
}

func newAuthority() (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("sites: CA key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "feedmail test sites CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("sites: CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("sites: CA certificate: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &authority{key: key, cert: cert, pool: pool, leaves: map[string]*tls.Certificate{}}, nil
}

// leaf returns the certificate for name, issuing it on first use: valid
// from an hour ago for a day, or, when expired, valid only for a day that
// ended a week ago.
func (a *authority) leaf(name string, expired bool) (*tls.Certificate, error) {
	k := name
	if expired {
		k = "!" + name
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if c := a.leaves[k]; c != nil {
		return c, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("sites: key for %s: %w", name, err)
	}
	from, until := time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	if expired {
		from, until = time.Now().Add(-8*24*time.Hour), time.Now().Add(-7*24*time.Hour)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(int64(len(a.leaves) + 2)),
		Subject:      pkix.Name{CommonName: name},
		DNSNames:     []string{name},
		NotBefore:    from,
		NotAfter:     until,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		return nil, fmt.Errorf("sites: certificate for %s: %w", name, err)
	}
	c := &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	a.leaves[k] = c
	return c, nil
}
