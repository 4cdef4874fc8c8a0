package provisionerapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// MaxResponse bounds what a response may hold.
const MaxResponse = 1 << 20

// RequestTimeout bounds every request, whatever the client's own timeout: a create request
// still in flight after it is no longer waited for (see SendWindow).
const RequestTimeout = 30 * time.Second

// StatusError is a response outside 2xx. Its URL is redacted.
type StatusError struct {
	Method, URL string
	Code        int
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s %s answered %d %s", e.Method, e.URL, e.Code, http.StatusText(e.Code))
}

// Send makes one rendered request with a copy of hc (nil: a plain client) that follows
// redirects within the request's origin only (sameOrigin), and decodes the JSON object it
// answers (an empty body is an empty object). Its errors name the method and the URL
// redacted (Redact); neither the headers (the credentials among them), the URL's userinfo and
// query values, nor the response appear in them.
func Send(ctx context.Context, hc *http.Client, req Request) (map[string]any, error) {
	redacted := Redact(req.URL)
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, req.Method, req.URL, strings.NewReader(req.Body))
	if err != nil {
		return nil, fmt.Errorf("%s %s: the request cannot be made", req.Method, redacted)
	}
	for k, v := range req.Headers {
		hreq.Header.Set(k, v)
	}
	var c http.Client
	if hc != nil {
		c = *hc
	}
	c.CheckRedirect = sameOrigin
	resp, err := c.Do(hreq)
	if err != nil {
		var ue *url.Error // says the method and the whole URL again
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("%s %s: %w", req.Method, redacted, err)
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponse+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s %s: reading the answer: %w", req.Method, redacted, err)
	case len(raw) > MaxResponse:
		return nil, fmt.Errorf("%s %s answered more than %d bytes", req.Method, redacted, MaxResponse)
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return nil, &StatusError{Method: req.Method, URL: redacted, Code: resp.StatusCode}
	}
	body := map[string]any{}
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &body); err != nil {
			return nil, fmt.Errorf("%s %s did not answer a JSON object", req.Method, redacted)
		}
	}
	return body, nil
}

// maxRedirects is how many redirects a request follows, as Go's client does by default.
const maxRedirects = 10

// sameOrigin follows a redirect only to the origin (scheme, host and port) of the request
// that was sent first. A redirect to plain http would send the credentials and the body in
// the clear; one to another host would send them there: Go's client drops Authorization
// across hosts, but not a credentials header of another name. Redirects within the origin
// stay allowed: an API may answer a create with 303 See Other to the new resource.
func sameOrigin(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	if from, to := origin(via[0].URL), origin(req.URL); from != to {
		return fmt.Errorf("redirected to another origin (%s): only redirects within %s are followed", to, from)
	}
	return nil
}

// origin is a URL's scheme://host:port, the port explicit.
func origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"https": "443", "http": "80"}[u.Scheme]
	}
	return u.Scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// redactedValue stands in for a query value.
const redactedValue = "redacted"

// Redact returns a URL fit for errors, status and logs: its scheme, host and path, without its
// userinfo and fragment, and with every query value replaced by "redacted" (a query item
// without a value is replaced whole). A URL that does not parse is not shown at all.
func Redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "an unparsable url"
	}
	out := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}
	if u.RawQuery != "" {
		items := strings.Split(u.RawQuery, "&")
		for i, item := range items {
			if key, _, ok := strings.Cut(item, "="); ok {
				items[i] = key + "=" + redactedValue
			} else {
				items[i] = redactedValue
			}
		}
		out.RawQuery = strings.Join(items, "&")
	}
	return out.String()
}
