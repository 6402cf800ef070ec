package mailer

import (
	"strings"
	"testing"
	"time"
)

func TestParseSMTPURL(t *testing.T) {
	tests := []struct {
		in      string
		want    SMTPConfig
		wantErr string
	}{
		{in: "smtp://mail.example.com", want: SMTPConfig{Host: "mail.example.com", Port: 587, TLS: TLSStartTLS, Pool: 4, Timeout: 30 * time.Second}},
		{in: "smtp://user:pa%3Ass%40@mail.example.com:2525?tls=starttls", want: SMTPConfig{Host: "mail.example.com", Port: 2525, Username: "user", Password: "pa:ss@", TLS: TLSStartTLS, Pool: 4, Timeout: 30 * time.Second}},
		{in: "smtp://mail.example.com?tls=tls", want: SMTPConfig{Host: "mail.example.com", Port: 465, TLS: TLSImplicit, Pool: 4, Timeout: 30 * time.Second}},
		{in: "smtps://u@mail.example.com", want: SMTPConfig{Host: "mail.example.com", Port: 465, Username: "u", TLS: TLSImplicit, Pool: 4, Timeout: 30 * time.Second}},
		{in: "smtp://127.0.0.1?tls=none", want: SMTPConfig{Host: "127.0.0.1", Port: 25, TLS: TLSNone, Pool: 4, Timeout: 30 * time.Second}},
		{in: "SMTP://[::1]:1025?tls=NONE&pool=8&rate=2.5&timeout=5s", want: SMTPConfig{Host: "::1", Port: 1025, TLS: TLSNone, Pool: 8, Rate: 2.5, Timeout: 5 * time.Second}},
		{in: "smtp://mail.example.com/?pool=1", want: SMTPConfig{Host: "mail.example.com", Port: 587, TLS: TLSStartTLS, Pool: 1, Timeout: 30 * time.Second}},
		{in: "", wantErr: "empty"},
		{in: "mail.example.com:587", wantErr: "scheme"},
		{in: "http://mail.example.com", wantErr: "scheme"},
		{in: "smtp:mail.example.com", wantErr: "//"},
		{in: "smtp://", wantErr: "missing host"},
		{in: "smtp://:25", wantErr: "missing host"},
		{in: "smtp://mail.example.com:0", wantErr: "port"},
		{in: "smtp://mail.example.com:70000", wantErr: "port"},
		{in: "smtp://mail.example.com:abc", wantErr: "port"},
		{in: "smtp://mail.example.com?tls=ssl", wantErr: "tls="},
		{in: "smtps://mail.example.com?tls=none", wantErr: "contradicts"},
		{in: "smtp://mail.example.com?pool=0", wantErr: "pool"},
		{in: "smtp://mail.example.com?pool=x", wantErr: "pool"},
		{in: "smtp://mail.example.com?pool=1000", wantErr: "pool"},
		{in: "smtp://mail.example.com?rate=-1", wantErr: "rate"},
		{in: "smtp://mail.example.com?rate=NaN", wantErr: "rate"},
		{in: "smtp://mail.example.com?timeout=soon", wantErr: "timeout"},
		{in: "smtp://mail.example.com?tsl=none", wantErr: "unknown parameter"},
		{in: "smtp://mail.example.com?tls=none&tls=tls", wantErr: "given 2 times"},
		{in: "smtp://mail.example.com/path", wantErr: "path"},
		{in: "smtp://user:secret@mail.example.com:99999", wantErr: "port"},
	}
	for _, tc := range tests {
		got, err := ParseSMTPURL(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseSMTPURL(%q) error = %v, want one about %q", tc.in, err, tc.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("error leaks the password: %v", err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseSMTPURL(%q): %v", tc.in, err)
			continue
		}
		if got != tc.want {
			t.Errorf("ParseSMTPURL(%q) =\n %+v\nwant\n %+v", tc.in, got, tc.want)
		}
	}
}

func TestSMTPConfigStringRedacts(t *testing.T) {
	cfg, err := ParseSMTPURL("smtp://user:secret@mail.example.com?rate=3")
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.String()
	if strings.Contains(s, "secret") || !strings.Contains(s, "user@mail.example.com:587") || !strings.Contains(s, "rate=3") {
		t.Errorf("String() = %q", s)
	}
}
