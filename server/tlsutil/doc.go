// Package tlsutil builds TLS configurations from upstream etcd's flags: a certificate and key,
// an optional trusted CA, and whether clients must present a certificate signed by it.
//
// The files:
//
//	tlsutil.go  TLS configurations for client and peer listeners and dialers
//	selfcert.go --auto-tls and --peer-auto-tls certificates
package tlsutil
