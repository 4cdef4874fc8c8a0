package main

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseRequestTotals(t *testing.T) {
	text := `# HELP apiserver_request_total [STABLE] Counter of apiserver requests
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="POST",version="v1"} 12
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="POST",version="v2"} 3
apiserver_request_total{code="200",component="apiserver",dry_run="",group="score.dev",resource="workloads",scope="resource",subresource="status",verb="PATCH",version="v1b1"} 7
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1"} 1e+03
apiserver_request_duration_seconds_bucket{le="0.1"} 4
`
	got, err := parseRequestTotals(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	want := requestCounts{
		{Verb: "POST", Resource: "configmaps", Code: "201"}:                  15,
		{Verb: "PATCH", Resource: "workloads.score.dev/status", Code: "200"}: 7,
		{Verb: "LIST", Resource: "pods", Code: "200"}:                        1000,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if n := got.writes(); n != 22 {
		t.Fatalf("writes %d, want 22", n)
	}
	before := requestCounts{{Verb: "POST", Resource: "configmaps", Code: "201"}: 10, {Verb: "LIST", Resource: "pods", Code: "200"}: 1000}
	if d := got.sub(before); d.writes() != 12 || len(d) != 2 {
		t.Fatalf("difference %v", d)
	}
}

func TestParseLabelsKeepsEscapes(t *testing.T) {
	got := parseLabels(`a="x,y",b="say \"hi\"",c=""`)
	want := map[string]string{"a": "x,y", "b": `say "hi"`, "c": ""}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestParseAudit(t *testing.T) {
	lines := []string{
		`{"stage":"ResponseComplete","verb":"patch","userAgent":"score-controllers/orchestrator","objectRef":{"resource":"workloads","subresource":"status","namespace":"bench","apiGroup":"score.dev"},"responseStatus":{"code":200}}`,
		`{"stage":"ResponseComplete","verb":"patch","userAgent":"score-controllers/orchestrator","objectRef":{"resource":"workloads","subresource":"status","namespace":"bench","apiGroup":"score.dev"},"responseStatus":{"code":409}}`,
		`{"stage":"ResponseComplete","verb":"create","userAgent":"score-controllers/orchestrator","objectRef":{"resource":"events","namespace":"bench","apiGroup":"events.k8s.io"},"responseStatus":{"code":201}}`,
		`{"stage":"ResponseComplete","verb":"update","userAgent":"score-controllers/v0.0.0 (linux/amd64) kubernetes/$Format/leader-election","objectRef":{"resource":"leases","namespace":"score-system","apiGroup":"coordination.k8s.io"},"responseStatus":{"code":200}}`,
		`{"stage":"ResponseComplete","verb":"create","userAgent":"kube-controller-manager/v1.37.1 (linux/amd64) kubernetes/abc/system:serviceaccount:kube-system:replicaset-controller","objectRef":{"resource":"pods","namespace":"bench"},"responseStatus":{"code":201}}`,
		`{"stage":"ResponseComplete","verb":"create","userAgent":"score-bench","objectRef":{"resource":"workloads","namespace":"bench","apiGroup":"score.dev"},"responseStatus":{"code":201}}`,
		`{"stage":"ResponseComplete","verb":"create","userAgent":"score-controllers/runtime","objectRef":{"resource":"services","namespace":"bench-probe"},"responseStatus":{"code":201}}`,
		`{"stage":"ResponseStarted","verb":"watch","userAgent":"score-bench","objectRef":{"resource":"workloads"}}`,
		`{"stage":"ResponseComplete","verb":"get","userAgent":"score-bench","objectRef":{"resource":"workloads"},"responseStatus":{"code":200}}`,
	}
	segment := strings.Join(lines, "\n") + "\n" + `{"stage":"Respon` // a line still being written
	counts, used, err := parseAudit([]byte(segment), map[string]bool{"bench-probe": true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if used != len(segment)-len(`{"stage":"Respon`) {
		t.Fatalf("consumed %d of %d bytes: a partial line must wait", used, len(segment))
	}
	s := counts.summary()
	got := [6]int{s.Ours, s.OursEvents, s.OursLeases, s.OursRejected, s.Cluster, s.Bench}
	if want := [6]int{2, 1, 1, 1, 1, 1}; got != want {
		t.Fatalf("ours, events, leases, rejected, cluster, bench = %v, want %v", got, want)
	}
	if s.total() != 6 {
		t.Fatalf("total %d", s.total())
	}
	if who, name := agentWho("kube-scheduler/v1.37.1 (linux/amd64) kubernetes/abc/scheduler"); who != whoCluster || name != "kube-scheduler" {
		t.Fatalf("scheduler: %s %s", who, name)
	}
}

func TestPercentileNearestRank(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Second)
	}
	for p, want := range map[float64]time.Duration{50: 50 * time.Second, 95: 95 * time.Second, 99: 99 * time.Second, 100: 100 * time.Second} {
		if got := percentile(ds, p); got != want {
			t.Errorf("p%v = %s, want %s", p, got, want)
		}
	}
	if percentile(nil, 50) != 0 || percentile([]time.Duration{3}, 99) != 3 {
		t.Fatal("edge cases")
	}
}

func TestMix(t *testing.T) {
	mix, err := parseMix("postgres=3,batch=1")
	if err != nil {
		t.Fatal(err)
	}
	got := assign(mix, 8)
	want := []string{"postgres", "postgres", "batch", "postgres", "postgres", "postgres", "batch", "postgres"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for _, bad := range []string{"mongo", "postgres=0", "none=x"} {
		if _, err := parseMix(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestParseProc(t *testing.T) {
	stat := "4242 (score controllers) S 1 4242 4242 0 -1 4194560 2530 0 0 0 1234 566 0 0 20 0 12 0 100 1000 2000"
	status := "Name:\tscore-controllers\nVmPeak:\t 900000 kB\nVmHWM:\t  204800 kB\nVmRSS:\t 102400 kB\n"
	u, err := parseProc(stat, status)
	if err != nil {
		t.Fatal(err)
	}
	if u.CPUSeconds != 18 || u.PeakRSSMiB != 200 {
		t.Fatalf("got %+v, want 18 CPU s and 200 MiB", u)
	}
}

// The timeline: each step is marked by its writes (a StatefulSet created by the plain client or
// applied by the provisioner, a claim bound by the volume controller, a pod of each kind bound
// to a node), timed from the phase's start; a failed write marks nothing.
func TestTimeline(t *testing.T) {
	line := func(second int, verb, agent, resource, sub, name string, code int) string {
		return fmt.Sprintf(`{"stage":"ResponseComplete","stageTimestamp":"2026-11-26T06:00:%02d.000000Z","verb":%q,"userAgent":%q,"objectRef":{"resource":%q,"subresource":%q,"namespace":"bench","name":%q},"responseStatus":{"code":%d}}`,
			second, verb, agent, resource, sub, name, code)
	}
	lines := []string{
		line(1, "create", "score-bench", "statefulsets", "", "db-a", 201),
		line(2, "patch", "score-controllers/provisioner", "statefulsets", "", "db-b", 201),
		line(3, "patch", "score-controllers/provisioner", "statefulsets", "", "db-b", 200), // not a creation
		line(4, "update", "kube-controller-manager/v1.37.1", "persistentvolumeclaims", "status", "data-db-a-0", 200),
		line(5, "update", "kube-controller-manager/v1.37.1", "persistentvolumeclaims", "status", "data-db-b-0", 409),
		line(6, "create", "kube-scheduler/v1.37.1", "pods", "binding", "db-a-0", 201),
		line(8, "create", "kube-scheduler/v1.37.1", "pods", "binding", "web-7d9f8c6b5-x2x9q", 201),
	}
	for i, l := range lines {
		lines[i] = strings.Replace(l, `"resource":"statefulsets"`, `"resource":"statefulsets","apiGroup":"apps"`, 1)
	}
	steps := newStepTimes()
	if _, _, err := parseAudit([]byte(strings.Join(lines, "\n")+"\n"), nil, steps); err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 11, 26, 6, 0, 0, 0, time.UTC)
	got := steps.timeline(start)
	want := []milestone{
		{Step: "StatefulSets created", Count: 2, HalfSeconds: 1, AllSeconds: 2},
		{Step: "volume claims bound", Count: 1, HalfSeconds: 4, AllSeconds: 4},
		{Step: "database pods scheduled", Count: 1, HalfSeconds: 6, AllSeconds: 6},
		{Step: "application pods scheduled", Count: 1, HalfSeconds: 8, AllSeconds: 8},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("timeline\n got %+v\nwant %+v", got, want)
	}
}

// A controller whose process has exited, and a cluster program running at the start of the
// load that no longer is, end the wait; a running controller, one never started, and a
// program that was not running at the start do not.
func TestExited(t *testing.T) {
	dir := t.TempDir()
	script := func(name, body string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return path
	}
	gone := &controller{name: "provisioner", controllers: "provisioner", bin: script("loses-lease", "echo starting; echo 'leader election lost'; exit 1"), dir: dir}
	running := &controller{name: "runtime", controllers: "runtime", bin: script("runs", "exec sleep 60"), dir: dir}
	for _, p := range []*controller{gone, running} {
		if err := p.start("kubeconfig"); err != nil {
			t.Fatal(err)
		}
	}
	defer running.stop()
	<-gone.exited
	atStart := map[string]procUsage{"kube-apiserver": {}, "kube-controller-manager": {}, "etcd": {}}
	now := map[string]procUsage{"kube-apiserver": {}, "etcd": {}, "kube-scheduler": {}}
	got := exited([]*controller{gone, running, {name: "orchestrator"}}, atStart, now)
	want := []string{"the provisioner (leader election lost)", "kube-controller-manager"}
	if !slices.Equal(got, want) {
		t.Fatalf("exited: %q, want %q", got, want)
	}
	if got := exited([]*controller{running}, atStart, atStart); len(got) != 0 {
		t.Fatalf("nothing exited, got %q", got)
	}
}

// The hop from a claim Bound to Ready, leg by leg: the claim's last status before the plan,
// the Deployment's last status by the cluster before the exposure's last; a Workload that did
// not go the whole way, another namespace's and a failed write count for nothing.
func TestHopLegs(t *testing.T) {
	line := func(second int, agent, resource, sub, ns, name string, code int) string {
		return fmt.Sprintf(`{"stage":"ResponseComplete","stageTimestamp":"2026-11-26T06:00:%02d.000000Z","verb":"patch","userAgent":%q,"objectRef":{"resource":%q,"apiGroup":%q,"subresource":%q,"namespace":%q,"name":%q},"responseStatus":{"code":%d}}`,
			second, agent, resource, "score.dev", sub, ns, name, code)
	}
	deploy := func(second int, agent, sub string, code int) string {
		return strings.Replace(line(second, agent, "deployments", sub, "bench", "w00001", code), `"score.dev"`, `"apps"`, 1)
	}
	lines := []string{
		line(1, "score-controllers/provisioner", "resourceclaims", "status", "bench", "w00001-db-postgres", 200),
		line(3, "score-controllers/provisioner", "resourceclaims", "status", "bench", "w00001-db-postgres", 200),
		line(4, "score-controllers/orchestrator", "workloadplans", "", "bench", "w00001", 201),
		line(5, "score-controllers/provisioner", "resourceclaims", "status", "bench", "w00001-db-postgres", 200), // after the plan
		deploy(6, "score-controllers/runtime", "", 201),
		deploy(8, "kube-controller-manager/v1.37.1", "status", 200),
		deploy(9, "kube-controller-manager/v1.37.1", "status", 409),
		line(10, "score-controllers/runtime", "workloadexposures", "status", "bench", "w00001", 200),
		line(12, "score-controllers/orchestrator", "workloads", "status", "bench", "w00001", 200),
		line(13, "score-controllers/orchestrator", "workloads", "status", "other", "w00001", 200),
		line(2, "score-controllers/provisioner", "resourceclaims", "status", "bench", "w00002-db-postgres", 200), // never Ready
	}
	steps := newStepTimes()
	if _, _, err := parseAudit([]byte(strings.Join(lines, "\n")+"\n"), nil, steps); err != nil {
		t.Fatal(err)
	}
	var got []float64
	for _, h := range steps.hopLegs() {
		got = append(got, h.P50Seconds)
	}
	if want := []float64{1, 2, 2, 2, 2}; !slices.Equal(got, want) {
		t.Fatalf("legs %v, want %v", got, want)
	}
}
