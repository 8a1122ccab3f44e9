package v2store

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// Error codes of the v2 API (upstream's numbers; clients switch on them).
const (
	EcodeKeyNotFound    = 100
	EcodeTestFailed     = 101
	EcodeNotFile        = 102
	EcodeNotDir         = 104
	EcodeNodeExist      = 105
	EcodeRootROnly      = 107
	EcodeDirNotEmpty    = 108
	EcodeUnauthorized   = 110
	EcodeValueRequired  = 200
	EcodePrevValueReq   = 201
	EcodeTTLNaN         = 202
	EcodeIndexNaN       = 203
	EcodeInvalidField   = 209
	EcodeInvalidForm    = 210
	EcodeRefreshValue   = 211
	EcodeRefreshTTLReq  = 212
	EcodeRaftInternal   = 300
	EcodeLeaderElect    = 301
	EcodeWatcherCleared = 400
	EcodeIndexCleared   = 401
)

// messages are upstream's texts for each code.
var messages = map[int]string{
	EcodeKeyNotFound:    "Key not found",
	EcodeTestFailed:     "Compare failed",
	EcodeNotFile:        "Not a file",
	103:                 "Reached the max number of peers in the cluster",
	EcodeNotDir:         "Not a directory",
	EcodeNodeExist:      "Key already exists",
	106:                 "The prefix of given key is a keyword in etcd",
	EcodeRootROnly:      "Root is read only",
	EcodeDirNotEmpty:    "Directory not empty",
	109:                 "Peer address has existed",
	EcodeUnauthorized:   "The request requires user authentication",
	EcodeValueRequired:  "Value is Required in POST form",
	EcodePrevValueReq:   "PrevValue is Required in POST form",
	EcodeTTLNaN:         "The given TTL in POST form is not a number",
	EcodeIndexNaN:       "The given index in POST form is not a number",
	204:                 "Value or TTL is required in POST form",
	205:                 "The given timeout in POST form is not a number",
	206:                 "Name is required in POST form",
	207:                 "Index or value is required",
	208:                 "Index and value cannot both be specified",
	EcodeInvalidField:   "Invalid field",
	EcodeInvalidForm:    "Invalid POST form",
	EcodeRefreshValue:   "Value provided on refresh",
	EcodeRefreshTTLReq:  "A TTL must be provided on refresh",
	EcodeRaftInternal:   "Raft Internal Error",
	EcodeLeaderElect:    "During Leader Election",
	EcodeWatcherCleared: "watcher is cleared due to etcd recovery",
	EcodeIndexCleared:   "The event in requested index is outdated and cleared",
	402:                 "Standby Internal Error",
	403:                 "Invalid active size",
	404:                 "Standby remove delay",
	500:                 "Client Internal Error",
}

// Error is a v2 API error as clients receive it.
type Error struct {
	ErrorCode int    `json:"errorCode"`
	Message   string `json:"message"`
	Cause     string `json:"cause,omitempty"`
	Index     uint64 `json:"index"`
}

// NewError is the error with code's text, its cause and the store index it was seen at.
func NewError(code int, cause string, index uint64) *Error {
	return &Error{ErrorCode: code, Message: messages[code], Cause: cause, Index: index}
}

func (e *Error) Error() string { return e.Message + " (" + e.Cause + ")" }

// StatusCode is the HTTP status the error is answered with.
func (e *Error) StatusCode() int {
	switch e.ErrorCode {
	case EcodeKeyNotFound:
		return http.StatusNotFound
	case EcodeNotFile, EcodeDirNotEmpty:
		return http.StatusForbidden
	case EcodeUnauthorized:
		return http.StatusUnauthorized
	case EcodeTestFailed, EcodeNodeExist:
		return http.StatusPreconditionFailed
	case EcodeRaftInternal, EcodeLeaderElect:
		return http.StatusInternalServerError
	}
	return http.StatusBadRequest
}

// WriteTo answers an HTTP request with the error, as upstream: its index in X-Etcd-Index and
// the JSON body on one line.
func (e *Error) WriteTo(w http.ResponseWriter) error {
	w.Header().Add("X-Etcd-Index", fmt.Sprint(e.Index))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.StatusCode())
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
