package dashboard

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// What stands between the dashboard and a request that is not its user's: the host names it
// answers to, its token, the origin of a stream's request and the number of streams.

// HostPatterns compiles --accept-hosts: regular expressions (Go's syntax, as kubectl proxy's),
// each matching a whole host name or address, without its port, in any case. Unlike kubectl
// proxy's, a pattern is always anchored: "dash\.example\.com" does not match
// "dash.example.com.evil.example".
func HostPatterns(patterns []string) ([]*regexp.Regexp, error) {
	var out []*regexp.Regexp
	for _, p := range patterns {
		if strings.TrimSpace(p) == "" {
			return nil, errors.New("an empty host pattern matches no host name")
		}
		re, err := regexp.Compile(`^(?i:` + p + `)$`)
		if err != nil {
			return nil, fmt.Errorf("host pattern %q: %w", p, err)
		}
		out = append(out, re)
	}
	return out, nil
}

// answersTo reports whether host, a request's Host header, is one the server answers to.
func (s *Server) answersTo(host string) bool {
	if slices.Contains(s.opts.AllowedHosts, host) {
		return true
	}
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	name = strings.TrimSuffix(strings.TrimPrefix(name, "["), "]")
	for _, re := range s.opts.AcceptHosts {
		if re.MatchString(name) {
			return true
		}
	}
	return false
}

// minTokenLength is the shortest token a user may give: 128 bits in base64.
const minTokenLength = 22

// NewToken is a random token of at least 128 bits (crypto/rand), for a server off loopback.
func NewToken() string { return rand.Text() }

// CheckToken says whether a token the user gave will do.
func CheckToken(token string) error {
	if len(token) < minTokenLength {
		return fmt.Errorf("a dashboard token has at least %d characters (128 random bits)", minTokenLength)
	}
	if strings.ContainsFunc(token, func(r rune) bool { return r <= ' ' || r >= 0x7f || strings.ContainsRune(`";,\`, r) }) {
		return errors.New("a dashboard token is printable ASCII without spaces, quotes, commas, semicolons or backslashes (it travels in a cookie)")
	}
	return nil
}

// tokenGuard admits the requests that carry the server's token.
type tokenGuard struct {
	sum    [sha256.Size]byte
	cookie string
}

func newTokenGuard(token string) *tokenGuard {
	if token == "" {
		return nil
	}
	g := &tokenGuard{sum: sha256.Sum256([]byte(token))}
	// The cookie's name is the token's own, so that two dashboards on one machine (cookies are
	// kept per host, whatever the port) do not overwrite each other's.
	name := sha256.Sum256([]byte("score-dashboard-cookie\x00" + token))
	g.cookie = "score-dashboard-" + hex.EncodeToString(name[:6])
	return g
}

// matches compares in constant time: the sums have the same length whatever was given.
func (g *tokenGuard) matches(given string) bool {
	sum := sha256.Sum256([]byte(given))
	return subtle.ConstantTimeCompare(sum[:], g.sum[:]) == 1
}

// admit reports whether r carries the token; when not, or when r brings it in the address, it
// has answered. The token in the address is taken once: the answer sets it as a cookie that no
// script can read (HttpOnly) and no other site's request carries (SameSite=Strict), and sends
// the browser to the same address without it, so that it does not stay in the address bar or
// the history.
func (g *tokenGuard) admit(w http.ResponseWriter, r *http.Request) bool {
	if q := r.URL.Query(); q.Has("token") {
		switch {
		case crossSite(r):
			http.Error(w, "the dashboard's address with its token works only when opened directly, not from another site", http.StatusForbidden)
		case !g.matches(q.Get("token")):
			http.Error(w, "this is not the dashboard's token: open the address scorectl dashboard printed when it started", http.StatusUnauthorized)
		default:
			http.SetCookie(w, &http.Cookie{Name: g.cookie, Value: q.Get("token"), Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
			q.Del("token")
			// one leading slash: "//host" would send the browser to another site
			to := &url.URL{Path: "/" + strings.TrimLeft(r.URL.Path, "/\\"), RawQuery: q.Encode()}
			w.Header().Set("Cache-Control", "no-store")
			http.Redirect(w, r, to.RequestURI(), http.StatusSeeOther)
		}
		return false
	}
	if c, err := r.Cookie(g.cookie); err == nil && g.matches(c.Value) {
		return true
	}
	if bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && g.matches(bearer) {
		return true
	}
	http.Error(w, "this dashboard needs its token: open the address scorectl dashboard printed when it started", http.StatusUnauthorized)
	return false
}

// crossSite reports whether the browser says r comes from a page of another origin: its
// Sec-Fetch-Site names another site (same-site included: another port of the same host is
// another program), or its Origin is not the server's own. A request with neither (curl, an
// older browser's same-origin GET) is not.
func crossSite(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return true
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return false
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return true // "null" included: a sandboxed frame, a file, a redirect across origins
	}
	return !strings.EqualFold(u.Host, r.Host)
}

// DefaultMaxStreams is how many live pages a server serves at once unless told otherwise. A
// browser keeps at most six connections to one server over HTTP/1.1, so this serves about ten
// people each with every page they may want open.
const DefaultMaxStreams = 64

// streamGuard serves a stream to the dashboard's own pages only, within MaxStreams: every
// stream holds watches on the API server in the user's name.
func (s *Server) streamGuard(stream http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if crossSite(r) {
			http.Error(w, "a live update is only for the dashboard's own pages", http.StatusForbidden)
			return
		}
		select {
		case s.streams <- struct{}{}:
			defer func() { <-s.streams }()
		default:
			w.Header().Set("Retry-After", "30")
			http.Error(w, fmt.Sprintf("this dashboard serves at most %d live pages at once: close one and reload", cap(s.streams)), http.StatusServiceUnavailable)
			return
		}
		stream(w, r)
	}
}
