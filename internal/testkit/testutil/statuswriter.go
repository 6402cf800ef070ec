package testutil

import "net/http"

// StatusWriter is an http.ResponseWriter that remembers the status its
// handler answered, for test servers and proxies that log or judge it.
type StatusWriter struct {
	http.ResponseWriter
	status int
}

// WriteHeader records the first status and passes it on.
func (w *StatusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write records 200 when no status was written, as net/http answers.
func (w *StatusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Code returns the status answered: 200 when the handler wrote nothing,
// as net/http then answers.
func (w *StatusWriter) Code() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *StatusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
