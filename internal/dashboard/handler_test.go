package dashboard

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/scheme"
)

// testHost is the Host the handlers under test answer to.
const testHost = "dashboard.test"

// testServer is the dashboard's real handler around a fake API server holding objs, which
// answers every question about the user's rights with yes and counts the questions.
func testServer(t *testing.T, opts Options, objs ...client.Object) (*Server, *atomic.Int64) {
	t.Helper()
	var reviews atomic.Int64
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if r, ok := obj.(*authorizationv1.SelfSubjectAccessReview); ok {
				reviews.Add(1)
				r.Status.Allowed = true
				return nil
			}
			return c.Create(ctx, obj, opts...)
		},
	}).Build()
	if opts.AllowedHosts == nil {
		opts.AllowedHosts = []string{testHost}
	}
	if opts.Coalesce == 0 {
		opts.Coalesce = time.Millisecond
	}
	s, err := newServer(opts, c)
	if err != nil {
		t.Fatal(err)
	}
	return s, &reviews
}

// listen serves s over a real connection, as a browser reaches it.
func listen(t *testing.T, s *Server) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv
}

// request sends a GET for path with the test's Host and the given headers ("Name: value"); the
// response's body is closed when ctx ends or the test does.
func request(t *testing.T, ctx context.Context, srv *httptest.Server, path string, headers ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = testHost
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// sseEvent is one server-sent event as a browser dispatches it.
type sseEvent struct{ name, data string }

// readEvent reads the stream as the HTML standard's event-stream interpretation does (CRLF, CR
// and LF each end a line) until the first event is dispatched.
func readEvent(t *testing.T, resp *http.Response) sseEvent {
	t.Helper()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	sc.Split(scanEventStreamLines)
	var e sseEvent
	var data []string
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if data == nil {
				continue
			}
			e.data = strings.Join(data, "\n")
			return e
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			e.name = value
		case "data":
			data = append(data, value)
		}
	}
	t.Fatalf("the stream ended without an event: %v", sc.Err())
	return e
}

// scanEventStreamLines splits at CRLF, a lone CR or LF.
func scanEventStreamLines(b []byte, atEOF bool) (int, []byte, error) {
	i := bytes.IndexAny(b, "\r\n")
	switch {
	case i < 0 && atEOF && len(b) > 0:
		return len(b), b, nil
	case i < 0:
		return 0, nil, nil
	case b[i] == '\n':
		return i + 1, b[:i], nil
	case i+1 < len(b) && b[i+1] == '\n':
		return i + 2, b[:i], nil
	case i+1 < len(b) || atEOF:
		return i + 1, b[:i], nil
	}
	return 0, nil, nil // a CR at the end: an LF may follow
}

func workloadWithReady(ns, name, reason, message string) *scorev1b1.Workload {
	return &scorev1b1.Workload{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Status: scorev1b1.WorkloadStatus{Conditions: []metav1.Condition{{Type: scorev1b1.ConditionReady, Status: metav1.ConditionFalse,
			Reason: reason, Message: message, LastTransitionTime: metav1.Now()}}},
	}
}

// A status message is the Workload owner's to write (a provisioner's words, an image's error);
// a CR in it must not end the data line, or everything after it becomes a field of the event
// stream: it could rename the fleet stream's events so the page ignores every later update.
func TestStreamKeepsACarriageReturnInAStatusMessageInsideItsEvent(t *testing.T) {
	s, _ := testServer(t, Options{}, workloadWithReady("team-a", "web", "Failing", "before\revent: x\rdata: injected\r\nafter"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp := request(t, ctx, listen(t, s), "/stream/fleet")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the fleet stream answered %s", resp.Status)
	}
	e := readEvent(t, resp)
	if e.name != "update" {
		t.Fatalf("the first event is named %q, want update", e.name)
	}
	for _, want := range []string{"before", "event: x", "data: injected", "after"} {
		if !strings.Contains(e.data, want) {
			t.Fatalf("the event's data lost %q:\n%s", want, e.data)
		}
	}
}
