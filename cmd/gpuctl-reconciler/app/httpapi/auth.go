package httpapi

import (
	"context"
	"net/http"
	"strings"
)

// Principal is who a bearer token belongs to.
type Principal struct {
	// Name identifies the caller in logs.
	Name string
	// Admin may ask for syncs.
	Admin bool
}

// TokenSource resolves bearer tokens. Implementations compare tokens in constant time.
type TokenSource interface {
	// Lookup returns the principal of a token, or false for an unknown token.
	Lookup(token string) (Principal, bool)
}

type principalKey struct{}

// PrincipalFrom returns the caller that the bearer token of a request named.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// authenticate answers 401 unless the request carries a known bearer token, and puts the
// token's principal into the request's context.
func (s *server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := bearerToken(r)
		if !ok {
			unauthorized(w, `Bearer realm="gpuctl"`, "missing bearer token: send Authorization: Bearer <token>")
			return
		}
		p, known := s.lookup(token)
		if !known {
			unauthorized(w, `Bearer realm="gpuctl", error="invalid_token"`, "invalid bearer token")
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	})
}

// lookup resolves a token through the token source (none: every token is unknown).
func (s *server) lookup(token string) (Principal, bool) {
	if token == "" || s.opts.Tokens == nil {
		return Principal{}, false
	}
	return s.opts.Tokens.Lookup(token)
}

func unauthorized(w http.ResponseWriter, challenge, msg string) {
	w.Header().Set("WWW-Authenticate", challenge)
	writeJSON(w, http.StatusUnauthorized, errorf(http.StatusUnauthorized, "%s", msg))
}

// requireAdmin answers 403 unless the authenticated caller is an admin.
func (s *server) requireAdmin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := PrincipalFrom(r.Context())
		if !p.Admin {
			writeJSON(w, http.StatusForbidden, errorf(http.StatusForbidden,
				"%s %s: %q is not an admin", r.Method, r.URL.Path, p.Name))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// bearerToken returns the token of an "Authorization: Bearer <token>" header; the scheme is
// case-insensitive (RFC 7235).
func bearerToken(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}
