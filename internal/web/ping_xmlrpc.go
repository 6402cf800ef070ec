package web

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// XML-RPC fault codes (the "specification for fault code interoperability").
const (
	faultParse         = -32700
	faultInvalid       = -32600
	faultMethod        = -32601
	faultParams        = -32602
	faultInternalError = -32603
)

// rpcCall is an XML-RPC methodCall. Only string parameters are read; a
// <value> without a type element is a string (XML-RPC spec).
type rpcCall struct {
	XMLName    xml.Name   `xml:"methodCall"`
	MethodName string     `xml:"methodName"`
	Params     []rpcParam `xml:"params>param"`
}

type rpcParam struct {
	Value rpcValue `xml:"value"`
}

type rpcValue struct {
	String *string    `xml:"string"`
	Text   string     `xml:",chardata"`
	Other  []xml.Name `xml:",any"`
}

// str returns the value as a string, or false when it has another type.
func (v rpcValue) str() (string, bool) {
	switch {
	case v.String != nil:
		return *v.String, true
	case len(v.Other) == 0:
		return v.Text, true
	}
	return "", false
}

func (p *pinger) xmlrpc(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if over, _ := p.limited(r); over {
		rpcResponse(w, true, "Too many pings from your address; try again later.")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxPingBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			rpcFault(w, faultParse, fmt.Sprintf("request larger than %d bytes", maxPingBody))
			return
		}
		rpcFault(w, faultParse, "could not read the request")
		return
	}
	var call rpcCall
	d := xml.NewDecoder(bytes.NewReader(body))
	d.Strict = true
	if err := d.Decode(&call); err != nil {
		var se *xml.SyntaxError
		var ue xml.UnmarshalError
		switch {
		case errors.As(err, &se), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			rpcFault(w, faultParse, "parse error: not well-formed XML")
		case errors.As(err, &ue), strings.Contains(err.Error(), "expected element type"):
			rpcFault(w, faultInvalid, "not an XML-RPC methodCall")
		default:
			rpcFault(w, faultParse, "parse error: "+err.Error())
		}
		return
	}
	var args []string
	for i, prm := range call.Params {
		s, ok := prm.Value.str()
		if !ok {
			rpcFault(w, faultParams, fmt.Sprintf("parameter %d must be a string", i+1))
			return
		}
		args = append(args, strings.TrimSpace(s))
	}
	var urls []string
	switch strings.TrimSpace(call.MethodName) {
	case "weblogUpdates.ping":
		if len(args) < 2 {
			rpcFault(w, faultParams, "weblogUpdates.ping takes (name, url)")
			return
		}
		urls = []string{args[1]}
	case "weblogUpdates.extendedPing":
		if len(args) < 4 {
			rpcFault(w, faultParams, "weblogUpdates.extendedPing takes (name, url, changesURL, feedURL[, tags])")
			return
		}
		urls = []string{args[3], args[1]}
	default:
		rpcFault(w, faultMethod, fmt.Sprintf("unknown method %q: feedmail answers weblogUpdates.ping and weblogUpdates.extendedPing", rpcTruncate(call.MethodName, 80)))
		return
	}
	out := p.ping(r.Context(), urls)
	if out.status == http.StatusInternalServerError && !out.ok {
		rpcFault(w, faultInternalError, "internal error; try again later")
		return
	}
	rpcResponse(w, !out.ok, out.message)
}

// rpcMember is one member of the response struct.
type rpcMember struct {
	Name  string      `xml:"name"`
	Value rpcOutValue `xml:"value"`
}

type rpcOutValue struct {
	Boolean *int    `xml:"boolean,omitempty"`
	Int     *int    `xml:"int,omitempty"`
	String  *string `xml:"string,omitempty"`
}

type rpcStruct struct {
	Members []rpcMember `xml:"struct>member"`
}

type rpcMethodResponse struct {
	XMLName xml.Name   `xml:"methodResponse"`
	Params  *rpcStruct `xml:"params>param>value,omitempty"`
	Fault   *rpcStruct `xml:"fault>value,omitempty"`
}

// rpcResponse answers the weblogs.com struct {flerror, message}.
func rpcResponse(w http.ResponseWriter, flerror bool, message string) {
	b := 0
	if flerror {
		b = 1
	}
	writeRPC(w, rpcMethodResponse{Params: &rpcStruct{Members: []rpcMember{
		{Name: "flerror", Value: rpcOutValue{Boolean: &b}},
		{Name: "message", Value: rpcOutValue{String: &message}},
	}}})
}

// rpcFault answers an XML-RPC fault {faultCode, faultString}.
func rpcFault(w http.ResponseWriter, code int, msg string) {
	writeRPC(w, rpcMethodResponse{Fault: &rpcStruct{Members: []rpcMember{
		{Name: "faultCode", Value: rpcOutValue{Int: &code}},
		{Name: "faultString", Value: rpcOutValue{String: &msg}},
	}}})
}

func writeRPC(w http.ResponseWriter, resp rpcMethodResponse) {
	out, err := xml.Marshal(resp)
	if err != nil { // cannot happen with these types
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/xml; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, xml.Header)
	_, _ = w.Write(out)
}

func rpcTruncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
