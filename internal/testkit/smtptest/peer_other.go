//go:build !unix

package smtptest

// peerGone cannot peek here: the client is taken to be listening.
func (c *faultConn) peerGone() bool { return false }
