package httpapi

import (
	"context"
	"net/http"
	"slices"
	"strings"
)

// Principal is who a bearer token belongs to, and what it may see.
type Principal struct {
	// Name identifies the caller in logs.
	Name string
	// Admin may ask for syncs and sees every namespace.
	Admin bool
	// AllNamespaces sees every namespace without being an admin.
	AllNamespaces bool
	// Namespaces are the namespaces whose jobs, logs, events, quotas and drift a caller that
	// is neither Admin nor AllNamespaces sees; none sees no namespace.
	Namespaces []string
}

// SeesAll reports whether the principal sees every namespace.
func (p Principal) SeesAll() bool { return p.Admin || p.AllNamespaces }

// Sees reports whether the principal sees a namespace.
func (p Principal) Sees(namespace string) bool {
	return p.SeesAll() || slices.Contains(p.Namespaces, namespace)
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

// authenticate answers 401 unless the request carries a known bearer token, 429 when the
// token is over its rate (Options.RateLimit), and puts the token's principal into the
// request's context.
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
		if s.overRate(w, token, p, false) {
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

// requireSeesAll answers 403 unless the authenticated caller sees every namespace: for the
// answers that name objects of every namespace and cannot be cut to some.
func (s *server) requireSeesAll(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := PrincipalFrom(r.Context())
		if !p.SeesAll() {
			writeJSON(w, http.StatusForbidden, errorf(http.StatusForbidden,
				"%s %s: %q does not see every namespace (token file: admin or namespaces=*)", r.Method, r.URL.Path, p.Name))
			return
		}
		next.ServeHTTP(w, r)
	})
}
