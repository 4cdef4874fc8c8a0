package dashboard

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

func TestEventSplitsLinesIntoDataFields(t *testing.T) {
	for data, want := range map[string]string{
		"<p>a</p>\n<p>b</p>":   "event: update\ndata: <p>a</p>\ndata: <p>b</p>\n\n",
		"a\rb\r\nc\n\rd":       "event: update\ndata: a\ndata: b\ndata: c\ndata: \ndata: d\n\n",
		"x\revent: y\rdata: z": "event: update\ndata: x\ndata: event: y\ndata: data: z\n\n",
	} {
		if got := string(event("update", data)); got != want {
			t.Errorf("event(%q) = %q, want %q", data, got, want)
		}
	}
}

func TestLatestEventsNewestFirst(t *testing.T) {
	at := func(min int) metav1.Time { return metav1.NewTime(time.Date(2026, 1, 1, 0, min, 0, 0, time.UTC)) }
	events := []corev1.Event{
		{Reason: "old", LastTimestamp: at(1), Count: 3},
		{Reason: "series", Series: &corev1.EventSeries{LastObservedTime: metav1.NewMicroTime(at(9).Time)}, LastTimestamp: at(2)},
		{Reason: "new-api", EventTime: metav1.NewMicroTime(at(5).Time)},
	}
	var got []string
	for _, e := range latestEvents(events, 2) {
		got = append(got, e.Reason)
	}
	if want := []string{"series", "new-api"}; !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestHubWakesOnlyMatchingStreams(t *testing.T) {
	var h hub
	fleet, page := make(chan struct{}, 1), make(chan struct{}, 1)
	cancelFleet := h.subscribe(&subscription{match: func(client.Object) bool { return true }, changed: fleet})
	cancelPage := h.subscribe(&subscription{match: func(o client.Object) bool { return o.GetName() == "web" }, changed: page})
	h.notify(toolscache.DeletedFinalStateUnknown{Obj: &scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Name: "api"}}})
	if len(fleet) != 1 || len(page) != 0 {
		t.Fatalf("a change to api woke the fleet %d and web's page %d times", len(fleet), len(page))
	}
	h.notify(&scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Name: "web"}})
	if len(fleet) != 1 || len(page) != 1 {
		t.Fatalf("one pending signal each: fleet %d, page %d", len(fleet), len(page))
	}
	cancelFleet()
	cancelPage()
	<-fleet
	<-page
	h.notify(&scorev1b1.Workload{ObjectMeta: metav1.ObjectMeta{Name: "web"}})
	if len(fleet)+len(page) != 0 {
		t.Fatal("a stream that left was woken")
	}
}

func TestHostsAndLoopback(t *testing.T) {
	for host, want := range map[string]bool{"localhost": true, "127.0.0.1": true, "::1": true, "0.0.0.0": false, "10.0.0.1": false, "example.com": false} {
		if IsLoopback(host) != want {
			t.Errorf("IsLoopback(%q) = %v", host, !want)
		}
	}
	s, _ := testServer(t, Options{AllowedHosts: LoopbackHosts("8001")})
	for host, want := range map[string]int{"localhost:8001": http.StatusOK, "127.0.0.1:8001": http.StatusOK, "[::1]:8001": http.StatusOK,
		"localhost:9999": http.StatusForbidden, "rebound.example:8001": http.StatusForbidden} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Host = host
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if w.Code != want {
			t.Errorf("Host %s: %d, want %d", host, w.Code, want)
		}
		if w.Code == http.StatusOK && !strings.Contains(w.Header().Get("Content-Security-Policy"), "script-src 'self'") {
			t.Errorf("no content security policy: %q", w.Header().Get("Content-Security-Policy"))
		}
	}
}

func TestShortAndJoin(t *testing.T) {
	if got := short(5, "abcdefgh"); got != "abcd…" {
		t.Errorf("short: %q", got)
	}
	if got := short(5, "abc"); got != "abc" {
		t.Errorf("short: %q", got)
	}
	if got := joinAnd([]string{"a", "b", "c"}); got != "a, b and c" {
		t.Errorf("joinAnd: %q", got)
	}
}
