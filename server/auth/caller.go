package auth

import "context"

// Info names the caller of a request: the user and the auth revision its credentials were
// checked at. Revision 0 means no credentials.
type Info struct {
	Username string
	Revision uint64
}

type infoKey struct{}

// WithInfo attaches an already known caller to ctx (the member's own requests, as root).
func WithInfo(ctx context.Context, in *Info) context.Context {
	return context.WithValue(ctx, infoKey{}, in)
}

// InfoFrom is the caller attached by WithInfo, or nil.
func InfoFrom(ctx context.Context) *Info {
	in, _ := ctx.Value(infoKey{}).(*Info)
	return in
}

// Credentials are what a request carried to say who sent it: a token (the "token" or
// "authorization" metadata) and the common name of a verified client certificate.
type Credentials struct {
	Token      string
	CommonName string
}

type credentialsKey struct{}

// WithCredentials attaches a request's credentials to ctx; they are read when a check needs
// the caller.
func WithCredentials(ctx context.Context, c Credentials) context.Context {
	return context.WithValue(ctx, credentialsKey{}, c)
}

// CredentialsFrom is what WithCredentials attached (zero when nothing was).
func CredentialsFrom(ctx context.Context) Credentials {
	c, _ := ctx.Value(credentialsKey{}).(Credentials)
	return c
}
