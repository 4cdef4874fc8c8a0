package dashboard

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
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
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).
		WithIndex(&corev1.Event{}, "involvedObject.kind", func(o client.Object) []string { return []string{o.(*corev1.Event).InvolvedObject.Kind} }).
		WithIndex(&corev1.Event{}, "involvedObject.name", func(o client.Object) []string { return []string{o.(*corev1.Event).InvolvedObject.Name} }).
		WithInterceptorFuncs(interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				if r, ok := obj.(*authorizationv1.SelfSubjectAccessReview); ok {
					reviews.Add(1)
					r.Status.Allowed = true
					return nil
				}
				return c.Create(ctx, obj, opts...)
			},
		}).Build()
	if opts.AllowedHosts == nil && opts.AcceptHosts == nil {
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

// serve sends a GET for path with host and headers ("Name: value") to the handler and records
// the answer; for requests that end at once (a stream's request is cancelled first).
func serve(s *Server, host, path string, headers ...string) *httptest.ResponseRecorder {
	ctx, cancel := context.WithCancel(context.Background())
	if strings.HasPrefix(path, "/stream/") {
		cancel()
	}
	defer cancel()
	r := httptest.NewRequestWithContext(ctx, http.MethodGet, path, nil)
	r.Host = host
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	return w
}

const testToken = "r4nd0m-t0ken-0f-the-test-5erver"

// Off loopback the Host header is the only thing that tells a page of this dashboard from a
// page of a site whose name a DNS rebinding pointed at this address.
func TestOffLoopbackOnlyTheAcceptedHostNamesAreServed(t *testing.T) {
	patterns, err := HostPatterns([]string{`dash\.example\.com`, `10\.0\.0\.7`, `fd00::7`})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := testServer(t, Options{AcceptHosts: patterns})
	for host, want := range map[string]int{
		"dash.example.com": http.StatusOK, "dash.example.com:8001": http.StatusOK, "DASH.Example.com:8001": http.StatusOK,
		"10.0.0.7:8001": http.StatusOK, "[fd00::7]:8001": http.StatusOK,
		"evil.example.com": http.StatusForbidden, "dash.example.com.evil.example": http.StatusForbidden,
		"xdash.example.com:8001": http.StatusForbidden, "10.0.0.70": http.StatusForbidden, "localhost:8001": http.StatusForbidden,
		"": http.StatusForbidden,
	} {
		if got := serve(s, host, "/").Code; got != want {
			t.Errorf("Host %q: %d, want %d", host, got, want)
		}
	}
}

func TestHostPatternsRefuseWhatCannotBeMatched(t *testing.T) {
	for _, p := range []string{"", "dash[", "  "} {
		if _, err := HostPatterns([]string{p}); err == nil {
			t.Errorf("the pattern %q was accepted", p)
		}
	}
}

// A handler that answers to no host name is a mistake in its caller, not an open door.
func TestAServerWithoutHostsToAnswerToIsRefused(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(scheme.New()).Build()
	if _, err := newServer(Options{}, c); err == nil {
		t.Fatal("a server with neither allowed nor accepted hosts was built")
	}
}

func TestOffLoopbackEveryRequestNeedsTheToken(t *testing.T) {
	s, _ := testServer(t, Options{Token: testToken}, workloadWithReady("team-a", "web", "Ready", "ok"))
	cookie := s.token.cookie + "=" + testToken
	for _, path := range []string{"/", "/static/app.js", "/workloads/team-a/web", "/stream/fleet", "/stream/workloads/team-a/web", "/nothing"} {
		for _, creds := range [][]string{
			nil,
			{"Cookie: " + s.token.cookie + "=" + testToken[:len(testToken)-1] + "x"},
			{"Cookie: " + s.token.cookie + "=" + testToken[:8]},
			{"Cookie: " + s.token.cookie + "="},
			{"Cookie: other=" + testToken},
			{"Authorization: Bearer " + testToken + "x"},
			{"Authorization: Basic " + testToken},
		} {
			if got := serve(s, testHost, path, creds...); got.Code != http.StatusUnauthorized {
				t.Errorf("%s with %q: %d, want 401", path, creds, got.Code)
			} else if strings.Contains(got.Body.String(), testToken[:8]) {
				t.Errorf("the refusal repeats the token: %s", got.Body)
			}
		}
	}
	for _, path := range []string{"/", "/static/app.js", "/workloads/team-a/web"} {
		for _, creds := range []string{"Cookie: " + cookie, "Authorization: Bearer " + testToken} {
			if got := serve(s, testHost, path, creds).Code; got != http.StatusOK {
				t.Errorf("%s with the token (%s): %d", path, strings.Fields(creds)[0], got)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if resp := request(t, ctx, listen(t, s), "/stream/fleet", "Cookie: "+cookie); resp.StatusCode != http.StatusOK {
		t.Errorf("the fleet stream with the cookie: %s", resp.Status)
	} else if e := readEvent(t, resp); e.name != "update" {
		t.Errorf("the fleet stream with the cookie sent %q", e.name)
	}
}

// The address the command prints carries the token once; the page's own requests and streams
// carry it in a cookie no script can read and no other site's request carries.
func TestTheTokenInTheAddressBecomesAStrictHttpOnlyCookie(t *testing.T) {
	s, _ := testServer(t, Options{Token: testToken}, workloadWithReady("team-a", "web", "Ready", "ok"))
	w := serve(s, testHost, "/workloads/team-a/web?q=a+b&token="+testToken)
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/workloads/team-a/web?q=a+b" {
		t.Fatalf("the address with the token: %d to %q, want 303 to the address without it", w.Code, w.Header().Get("Location"))
	}
	cookies := w.Result().Cookies()
	if len(cookies) != 1 {
		t.Fatalf("%d cookies set", len(cookies))
	}
	ck := cookies[0]
	if ck.Value != testToken || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/" {
		t.Fatalf("the cookie is %s: want the token, HttpOnly, SameSite=Strict, Path=/", ck)
	}
	if got := serve(s, testHost, "/workloads/team-a/web?q=a+b", "Cookie: "+ck.Name+"="+ck.Value).Code; got != http.StatusOK {
		t.Fatalf("the page with the cookie: %d", got)
	}
	// The address it sends the browser to stays on this server.
	if w := serve(s, testHost, "//evil.example/x?token="+testToken); w.Header().Get("Location") != "/evil.example/x" {
		t.Fatalf("an address starting with // was answered with %d to %q", w.Code, w.Header().Get("Location"))
	}

	for name, req := range map[string][]string{
		"a wrong token":                     {"/?token=" + testToken + "x"},
		"a token from another site's link":  {"/?token=" + testToken, "Sec-Fetch-Site: cross-site"},
		"a token from another site's frame": {"/?token=" + testToken, "Origin: http://evil.example"},
	} {
		w := serve(s, testHost, req[0], req[1:]...)
		if w.Code < 400 || len(w.Result().Cookies()) > 0 {
			t.Errorf("%s: %d with cookies %v, want a refusal and no cookie", name, w.Code, w.Result().Cookies())
		}
	}
}

// A page elsewhere can open an EventSource to any address; the browser says where it comes
// from, and a stream is only for the dashboard's own pages.
func TestCrossSiteStreamRequestsAreRefused(t *testing.T) {
	s, _ := testServer(t, Options{}, workloadWithReady("team-a", "web", "Ready", "ok"))
	for _, path := range []string{"/stream/fleet", "/stream/workloads/team-a/web"} {
		for _, headers := range [][]string{
			{"Sec-Fetch-Site: cross-site"}, {"Sec-Fetch-Site: same-site"},
			{"Origin: http://evil.example"}, {"Origin: null"}, {"Origin: http://dashboard.test.evil.example"},
			{"Origin: http://dashboard.test:8080"}, {"Origin: http://evil.example", "Sec-Fetch-Site: same-origin"},
		} {
			if got := serve(s, testHost, path, headers...).Code; got != http.StatusForbidden {
				t.Errorf("%s with %q: %d, want 403", path, headers, got)
			}
		}
		for _, headers := range [][]string{
			nil, {"Sec-Fetch-Site: same-origin"}, {"Sec-Fetch-Site: same-origin", "Origin: http://dashboard.test"},
			{"Origin: http://DASHBOARD.test"}, {"Sec-Fetch-Site: none"},
		} {
			if got := serve(s, testHost, path, headers...).Code; got != http.StatusOK {
				t.Errorf("%s with %q: %d, want 200", path, headers, got)
			}
		}
	}
	// A link from another site still opens a page (what it shows, that site cannot read).
	if got := serve(s, testHost, "/", "Sec-Fetch-Site: cross-site", "Sec-Fetch-Mode: navigate").Code; got != http.StatusOK {
		t.Errorf("a link from another site: %d", got)
	}
}

// Every stream holds watches on the API server in the user's name: their number is bounded.
func TestStreamsBeyondTheBoundAreRefused(t *testing.T) {
	s, _ := testServer(t, Options{MaxStreams: 2}, workloadWithReady("team-a", "web", "Ready", "ok"))
	srv := listen(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	first, closeFirst := context.WithCancel(ctx)
	for _, open := range []struct {
		ctx  context.Context
		path string
	}{{first, "/stream/fleet"}, {ctx, "/stream/workloads/team-a/web"}} {
		resp := request(t, open.ctx, srv, open.path)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("stream %s: %s", open.path, resp.Status)
		}
		readEvent(t, resp)
	}
	resp := request(t, ctx, srv, "/stream/fleet")
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a third stream: %s with Retry-After %q, want 503 with it", resp.Status, resp.Header.Get("Retry-After"))
	}
	if got := request(t, ctx, srv, "/").StatusCode; got != http.StatusOK {
		t.Fatalf("a page while the streams are full: %d", got)
	}
	closeFirst()
	for {
		resp := request(t, ctx, srv, "/stream/fleet")
		if resp.StatusCode == http.StatusOK {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("a stream that ended did not give its place back")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// No other site may frame a page of the dashboard (clickjacking), whatever the answer is.
func TestEveryResponseForbidsFraming(t *testing.T) {
	s, _ := testServer(t, Options{Token: testToken}, workloadWithReady("team-a", "web", "Ready", "ok"))
	cookie := "Cookie: " + s.token.cookie + "=" + testToken
	for name, w := range map[string]*httptest.ResponseRecorder{
		"a page":              serve(s, testHost, "/", cookie),
		"the script":          serve(s, testHost, "/static/app.js", cookie),
		"a stream":            serve(s, testHost, "/stream/fleet", cookie),
		"not found":           serve(s, testHost, "/nothing", cookie),
		"no token":            serve(s, testHost, "/"),
		"the token exchange":  serve(s, testHost, "/?token="+testToken),
		"another host":        serve(s, "evil.example", "/", cookie),
		"a cross-site stream": serve(s, testHost, "/stream/fleet", cookie, "Sec-Fetch-Site: cross-site"),
	} {
		if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("%s (%d): Content-Security-Policy %q", name, w.Code, csp)
		}
		if got := w.Header().Get("X-Frame-Options"); got != "DENY" {
			t.Errorf("%s (%d): X-Frame-Options %q", name, w.Code, got)
		}
	}
}

// Each stream asks about the rights around the Workload its address names, and anyone who
// reaches the server chooses the address: the answers kept are bounded in number.
func TestRightsCacheHoldsAtMostItsBoundAcrossManyAddresses(t *testing.T) {
	s, reviews := testServer(t, Options{})
	// the plan and the exposure are asked about by name, so every address asks twice anew
	for i := range maxRights {
		serve(s, testHost, "/stream/workloads/team-a/w"+strconv.Itoa(i))
	}
	if reviews.Load() <= maxRights {
		t.Fatalf("only %d questions asked: the test does not reach the bound", reviews.Load())
	}
	if n := s.rights.len(); n > maxRights {
		t.Fatalf("%d answers held, bound %d", n, maxRights)
	}
}

// An answer is trusted for rightsTTL, then asked again, and not kept any longer.
func TestRightsCacheForgetsAnswersOnceTheyExpire(t *testing.T) {
	s, reviews := testServer(t, Options{})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.rights.now = func() time.Time { return now }
	for i := range 10 {
		serve(s, testHost, "/stream/workloads/team-a/w"+strconv.Itoa(i))
	}
	asked, held := reviews.Load(), s.rights.len()
	serve(s, testHost, "/stream/workloads/team-a/w0")
	if reviews.Load() != asked {
		t.Fatalf("a fresh answer was asked again")
	}
	now = now.Add(rightsTTL)
	serve(s, testHost, "/stream/workloads/team-a/w0")
	if reviews.Load() == asked {
		t.Fatal("an answer as old as the TTL was trusted")
	}
	if n := s.rights.len(); n >= held {
		t.Fatalf("%d answers held after they expired (%d before)", n, held)
	}
}

func TestNewTokenIsRandomAndLongEnough(t *testing.T) {
	a, b := NewToken(), NewToken()
	if len(a) < 26 || a == b || CheckToken(a) != nil { // base32: 26 characters carry 130 bits
		t.Fatalf("tokens %q and %q: want two different ones of at least 128 bits", a, b)
	}
}

// A token the user gives must be as hard to guess as one the server draws, and fit in a cookie.
func TestAGivenTokenThatIsShortOrCannotBeACookieIsRefused(t *testing.T) {
	for _, tok := range []string{"hunter2", strings.Repeat("a", minTokenLength-1), testToken + " x", testToken + ";x", testToken + "é"} {
		if err := CheckToken(tok); err == nil {
			t.Errorf("the token %q was accepted", tok)
		}
		c := fake.NewClientBuilder().WithScheme(scheme.New()).Build()
		if _, err := newServer(Options{AllowedHosts: []string{testHost}, Token: tok}, c); err == nil {
			t.Errorf("a server was built with the token %q", tok)
		}
	}
}
