package provisionerapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// MaxResponse bounds what a response may hold.
const MaxResponse = 1 << 20

// DefaultRequestTimeout bounds a request when the caller gives no client.
const DefaultRequestTimeout = 30 * time.Second

// StatusError is a response outside 2xx.
type StatusError struct {
	Method, URL string
	Code        int
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s %s answered %d %s", e.Method, e.URL, e.Code, http.StatusText(e.Code))
}

// Send makes one rendered request with hc (nil: a client with DefaultRequestTimeout) and
// decodes the JSON object it answers (an empty body is an empty object). Neither the headers
// (the credentials among them) nor the response appear in its errors.
func Send(ctx context.Context, hc *http.Client, req Request) (map[string]any, error) {
	hreq, err := http.NewRequestWithContext(ctx, req.Method, req.URL, strings.NewReader(req.Body))
	if err != nil {
		return nil, err
	}
	for k, v := range req.Headers {
		hreq.Header.Set(k, v)
	}
	if hc == nil {
		hc = &http.Client{Timeout: DefaultRequestTimeout}
	}
	resp, err := hc.Do(hreq)
	if err != nil {
		var ue *url.Error // says the method and URL again
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("%s %s: %w", req.Method, req.URL, err)
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponse+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s %s: reading the answer: %w", req.Method, req.URL, err)
	case len(raw) > MaxResponse:
		return nil, fmt.Errorf("%s %s answered more than %d bytes", req.Method, req.URL, MaxResponse)
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return nil, &StatusError{Method: req.Method, URL: req.URL, Code: resp.StatusCode}
	}
	body := map[string]any{}
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &body); err != nil {
			return nil, fmt.Errorf("%s %s did not answer a JSON object", req.Method, req.URL)
		}
	}
	return body, nil
}
