// Package provisionerapi is the http+api:// strategy without Kubernetes: it renders the
// definition's templated requests, sends them (Send), reads readiness from a response, and
// keeps the strategy's progress (the create response, the latest status response, when it
// started, how many polls) as the instance's state, which the controller stores in the state
// Secret like any provisioner's. The controller makes at most one request per reconcile and
// comes back after Backoff, so waiting for an external API never holds a worker.
package provisionerapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/provisioners/provisioning"
	"github.com/score-orchestrator/score-orchestrator/internal/templating/tplfuncs"
	"github.com/score-orchestrator/score-orchestrator/internal/templating/urltemplate"
	"github.com/score-orchestrator/score-orchestrator/internal/templating/yamltemplate"
)

// Defaults of the api block.
const (
	DefaultPollInterval = 2 * time.Second
	DefaultTimeout      = 10 * time.Minute
	// MaxPollInterval caps the doubling of the poll interval.
	MaxPollInterval = 30 * time.Second
)

// Phases of an instance's progress.
const (
	PhaseCreating = ""        // nothing created yet
	PhaseSending  = "Sending" // one pass is sending the create request (CreateDue)
	PhasePending  = "Pending" // created, not yet ready
	PhaseReady    = "Ready"
	PhaseFailed   = "Failed"
)

// SendWindow is how long the claims of an instance wait for the outcome of a create request
// another pass is sending: a request lasts RequestTimeout at most, so a Sending state older
// than this was left by a pass that stopped before recording the outcome (a restart).
const SendWindow = 2 * RequestTimeout

// CreateDue says whether a pass sends the create request now: when nothing was created and
// no failed request's wait (Next) is running, or when the pass that was sending it has not
// recorded its outcome within SendWindow. Otherwise it waits, for the duration returned at
// most.
//
// A pass that sends records PhaseSending first, on top of the state it read: of the claims of
// one instance that read the same state, one records it and the others find the state
// changed, read it again, and wait. So one create request is sent per instance, across
// workers, shards and restarts; only a pass that stopped between sending and recording
// leaves a request whose outcome is unknown, sent again after SendWindow.
func CreateDue(s State, now time.Time) (bool, time.Duration) {
	switch s.Phase {
	case PhaseCreating:
		if now.Before(s.Next) {
			return false, s.Next.Sub(now)
		}
		return true, 0
	case PhaseSending:
		if left := SendWindow - now.Sub(s.Since); left > 0 {
			return false, left
		}
		return true, 0
	}
	return false, 0
}

// State is the strategy's progress, kept as the instance's state. Templates see it as .State:
// .State.created and .State.observed are the response bodies.
type State struct {
	Phase    string         `json:"phase,omitempty"`
	Message  string         `json:"message,omitempty"`
	Created  map[string]any `json:"created,omitempty"`
	Observed map[string]any `json:"observed,omitempty"`
	Since    time.Time      `json:"since,omitzero"`
	Polls    int            `json:"polls,omitempty"`
	// Next is when the next request may be made: a reconcile that comes earlier (any watch
	// event does) waits for it instead of polling, or instead of sending a failed create
	// request again.
	Next time.Time `json:"next,omitzero"`
	// Attempts counts the create requests that failed; the wait before the next one doubles
	// with it (CreateFailed).
	Attempts int `json:"attempts,omitempty"`
}

// StateFrom reads the progress from an instance's state.
func StateFrom(m map[string]any) (State, error) {
	var s State
	raw, err := json.Marshal(m)
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return s, fmt.Errorf("the instance's state is not an http+api state: %w", err)
	}
	return s, nil
}

// Map is the progress as an instance's state.
func (s State) Map() map[string]any {
	raw, _ := json.Marshal(s)
	m := map[string]any{}
	_ = json.Unmarshal(raw, &m)
	return m
}

// Request is a rendered request.
type Request struct {
	Method, URL string
	Headers     map[string]string
	Body        string
}

// Render evaluates a request's templates over data. The URL must be https: credentials and
// secret outputs travel on it. Every value the URL template prints is escaped for the part of
// the URL it lands in (urltemplate): a tenant's params are data there, never a path segment,
// a query parameter or a host of their own.
func Render(req orchconfig.APIRequest, defaultMethod string, data provisioning.Data) (Request, error) {
	out := Request{Method: req.Method, Headers: map[string]string{}}
	if out.Method == "" {
		out.Method = defaultMethod
	}
	t, err := urltemplate.Parse("url", req.URL, "missingkey=zero")
	if err != nil {
		return Request{}, fmt.Errorf("url template does not parse: %w", err)
	}
	if out.URL, err = execute("url", t, data); err != nil {
		return Request{}, err
	}
	u, err := url.Parse(strings.TrimSpace(out.URL))
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return Request{}, fmt.Errorf("the url %s is not an https:// url", Redact(strings.TrimSpace(out.URL)))
	}
	out.URL = u.String()
	if out.Body, err = renderBody(req, data); err != nil {
		return Request{}, err
	}
	for k, v := range req.Headers {
		if out.Headers[k], err = render("header "+k, v, data); err != nil {
			return Request{}, err
		}
	}
	return out, nil
}

// renderBody renders a request's body so that the values it prints stay values: a JSON body
// (Content-Type *json, or none and a body that starts with { or [) is rendered guarded
// (yamltemplate) and written back as JSON, each value a JSON value where the template put it;
// a form body (application/x-www-form-urlencoded) escapes each value as one component. A body
// of another type is the definition's text, its values printed as they are.
func renderBody(req orchconfig.APIRequest, data provisioning.Data) (string, error) {
	body := strings.TrimSpace(req.Body)
	if body == "" {
		return req.Body, nil
	}
	contentType := ""
	for k, v := range req.Headers {
		if strings.EqualFold(k, "Content-Type") {
			contentType = strings.ToLower(v)
		}
	}
	switch {
	case strings.Contains(contentType, "json") || contentType == "" && (body[0] == '{' || body[0] == '['):
		t, err := tplfuncs.ParseYAML("body", body, nil)
		if err != nil {
			return "", fmt.Errorf("body template does not parse: %w", err)
		}
		out, err := execute("body", t, data)
		if err != nil {
			return "", err
		}
		v, err := yamltemplate.DecodeOne([]byte(out))
		if err != nil {
			return "", fmt.Errorf("body template does not render JSON: %w", err)
		}
		b, err := json.Marshal(v)
		return string(b), err
	case strings.HasPrefix(contentType, "application/x-www-form-urlencoded"):
		t, err := urltemplate.ParseForm("body", req.Body, "missingkey=zero")
		if err != nil {
			return "", fmt.Errorf("body template does not parse: %w", err)
		}
		return execute("body", t, data)
	}
	return render("body", req.Body, data)
}

func render(name, text string, data provisioning.Data) (string, error) {
	t, err := tplfuncs.Parse(name, text, nil, "missingkey=zero")
	if err != nil {
		return "", fmt.Errorf("%s template does not parse: %w", name, err)
	}
	return execute(name, t, data)
}

func execute(name string, t *template.Template, data provisioning.Data) (string, error) {
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return "", fmt.Errorf("%s template failed: %w", name, err)
	}
	return b.String(), nil
}

// Lookup follows a dotted path (status.phase, items.0.state) into a decoded JSON value.
func Lookup(v any, path string) (any, bool) {
	for _, step := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			next, ok := x[step]
			if !ok {
				return nil, false
			}
			v = next
		case []any:
			i, err := strconv.Atoi(step)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// Judge reads readiness from a response body: Ready, Failed or Pending, and the value read.
// Without readyWhen a successful response is ready.
func Judge(when *orchconfig.APIReadyWhen, body map[string]any) (phase, value string) {
	if when == nil {
		return PhaseReady, ""
	}
	v, ok := Lookup(body, when.Path)
	if !ok {
		return PhasePending, ""
	}
	value = fmt.Sprint(v)
	switch {
	case slices.Contains(when.Ready, value):
		return PhaseReady, value
	case slices.Contains(when.Failed, value):
		return PhaseFailed, value
	}
	return PhasePending, value
}

// CreateFailed is the progress after a create request failed at now (nothing was created): no
// phase again, the failure's message, and the next attempt after the poll interval doubled
// per failed attempt (Backoff). The time is kept in the state rather than in the controller's
// retry backoff: writing the state wakes the instance's claims, which then wait for it.
func CreateFailed(s State, a *orchconfig.API, message string, now time.Time) State {
	interval, _ := Settings(a)
	return State{Message: message, Attempts: s.Attempts + 1, Next: now.Add(Backoff(interval, s.Attempts))}
}

// Settings are the api block's poll interval and timeout, with their defaults.
func Settings(a *orchconfig.API) (interval, timeout time.Duration) {
	interval, timeout = DefaultPollInterval, DefaultTimeout
	if d, err := time.ParseDuration(a.PollInterval); err == nil && d > 0 {
		interval = d
	}
	if d, err := time.ParseDuration(a.Timeout); err == nil && d > 0 {
		timeout = d
	}
	return interval, timeout
}

// Backoff is the wait before poll number polls+1: the interval doubled per poll, capped at
// MaxPollInterval (or the interval, when that is longer).
func Backoff(interval time.Duration, polls int) time.Duration {
	limit := max(MaxPollInterval, interval)
	d := interval
	for i := 0; i < polls && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

// Observe folds a status response (or the create response, without a status request) into
// the progress at now: ready, failed by the API, failed by timeout, or still pending.
func Observe(s State, a *orchconfig.API, body map[string]any, now time.Time) State {
	s.Observed = body
	s.Polls++
	phase, value := Judge(a.ReadyWhen, body)
	_, timeout := Settings(a)
	switch {
	case phase == PhaseReady:
		s.Phase, s.Message = PhaseReady, ""
	case phase == PhaseFailed:
		s.Phase, s.Message = PhaseFailed, fmt.Sprintf("the API reports %s %s", a.ReadyWhen.Path, value)
	case now.Sub(s.Since) >= timeout:
		s.Phase, s.Message = PhaseFailed, fmt.Sprintf("not ready within %s (%s is %q)", timeout, a.ReadyWhen.Path, value)
	default:
		s.Phase, s.Message = PhasePending, fmt.Sprintf("%s is %q", a.ReadyWhen.Path, value)
	}
	return s
}

// TimedOut marks a pending instance failed once its timeout has passed, also when its status
// request keeps failing.
func TimedOut(s State, a *orchconfig.API, now time.Time) (State, bool) {
	_, timeout := Settings(a)
	if s.Phase != PhasePending || now.Sub(s.Since) < timeout {
		return s, false
	}
	s.Phase, s.Message = PhaseFailed, fmt.Sprintf("not ready within %s", timeout)
	return s, true
}
