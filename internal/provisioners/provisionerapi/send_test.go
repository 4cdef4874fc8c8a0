package provisionerapi

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// The secrets a platform may put into a URL: a password in its userinfo, a token in its query.
const (
	urlPassword = "url-pass-0451"
	urlToken    = "url-token-0451"
)

// withURLSecrets returns base (https://host:port) with a path, the userinfo password and the
// query token.
func withURLSecrets(base, path string) string {
	return strings.Replace(base, "https://", "https://apiuser:"+urlPassword+"@", 1) + path + "?token=" + urlToken + "&region=eu"
}

// A URL's userinfo and query values stay out of every error Send returns: they reach the
// claim's status, the dashboard and the logs.
func TestSendKeepsURLSecretsOutOfErrors(t *testing.T) {
	api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/fails":
			w.WriteHeader(http.StatusInternalServerError)
		case "/garbage":
			_, _ = w.Write([]byte("<html>not json</html>"))
		}
	}))
	defer api.Close()
	closed := httptest.NewTLSServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()

	cases := []struct {
		name, url string
		want      string // what the error still says
	}{
		{"no answer", withURLSecrets(closedURL, "/dbs"), "POST " + closedURL + "/dbs?token=redacted&region=redacted: "},
		{"a non-2xx answer", withURLSecrets(api.URL, "/fails"), "POST " + api.URL + "/fails?token=redacted&region=redacted answered 500 Internal Server Error"},
		{"not a JSON object", withURLSecrets(api.URL, "/garbage"), "POST " + api.URL + "/garbage?token=redacted&region=redacted did not answer a JSON object"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Send(context.Background(), api.Client(), Request{Method: "POST", URL: tc.url, Headers: map[string]string{}})
			if err == nil {
				t.Fatal("no error")
			}
			if msg := err.Error(); strings.Contains(msg, urlPassword) || strings.Contains(msg, urlToken) || strings.Contains(msg, "apiuser") {
				t.Fatalf("the URL's secrets reached the error: %s", msg)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not say %q", err, tc.want)
			}
		})
	}
	var se *StatusError
	if _, err := Send(context.Background(), api.Client(), Request{Method: "DELETE", URL: withURLSecrets(api.URL, "/fails")}); !errors.As(err, &se) || se.Code != 500 {
		t.Fatalf("a non-2xx answer is a *StatusError: %v", err)
	}
}

func TestRedact(t *testing.T) {
	cases := map[string]string{
		"https://api.example/v1/dbs":                           "https://api.example/v1/dbs",
		"https://u:p@api.example:8443/v1/dbs?token=t&x=1#frag": "https://api.example:8443/v1/dbs?token=redacted&x=redacted",
		"https://u@api.example/dbs?sometoken":                  "https://api.example/dbs?redacted",
		"https://api.example/a%2Fb":                            "https://api.example/a%2Fb",
		"://no scheme":                                         "an unparsable url",
	}
	for in, want := range cases {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// recorder is an API that records the requests it receives and the credentials they carry.
type recorder struct {
	mu       sync.Mutex
	requests []string // "<method> <path> <X-Api-Key>"
}

func (r *recorder) handler(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.requests = append(r.requests, req.Method+" "+req.URL.Path+" "+req.Header.Get("X-Api-Key"))
		r.mu.Unlock()
		next(w, req)
	}
}

func (r *recorder) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.requests...)
}

// Redirects are followed within the request's origin only (scheme, host and port): a
// redirect to plain http, or to another host, would carry the credentials header there
// (Go's client drops Authorization across hosts, but not a header of another name).
func TestSendFollowsRedirectsWithinItsOriginOnly(t *testing.T) {
	elsewhere := &recorder{}
	otherHost := httptest.NewTLSServer(elsewhere.handler(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{"at":"other host"}`)) }))
	defer otherHost.Close()
	plain := httptest.NewServer(elsewhere.handler(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{"at":"plain http"}`)) }))
	defer plain.Close()

	own := &recorder{}
	api := httptest.NewTLSServer(own.handler(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/moved":
			http.Redirect(w, r, "/dbs/1", http.StatusSeeOther)
		case "/dbs/1":
			_, _ = w.Write([]byte(`{"id":"1"}`))
		case "/to-plain-http":
			http.Redirect(w, r, plain.URL+"/dbs/1", http.StatusFound)
		case "/to-other-host":
			http.Redirect(w, r, otherHost.URL+"/dbs/1", http.StatusTemporaryRedirect)
		}
	}))
	defer api.Close()
	// One client trusts both TLS servers (httptest's certificate is the same), as a client
	// trusting a real API's CA may trust another host's.
	hc := api.Client()

	send := func(path string) (map[string]any, error) {
		return Send(context.Background(), hc, Request{Method: "POST", URL: api.URL + path, Headers: map[string]string{"X-Api-Key": "key-0451"}})
	}
	body, err := send("/moved")
	if err != nil || body["id"] != "1" {
		t.Fatalf("a redirect within the origin is followed: %v %v", body, err)
	}
	if got := own.seen(); len(got) != 2 || got[1] != "GET /dbs/1 key-0451" {
		t.Fatalf("requests %v", got)
	}
	for _, path := range []string{"/to-plain-http", "/to-other-host"} {
		t.Run(path, func(t *testing.T) {
			body, err := send(path)
			if err == nil {
				t.Fatalf("followed to %v", body)
			}
			if !strings.Contains(err.Error(), "redirected to another origin") {
				t.Fatalf("error %q", err)
			}
		})
	}
	if got := elsewhere.seen(); len(got) != 0 {
		t.Fatalf("a request (with the credentials header) left the origin: %v", got)
	}
}
