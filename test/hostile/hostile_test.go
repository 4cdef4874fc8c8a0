package hostile

import (
	"crypto/tls"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/clusters"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

// create makes mallory's Workload and deletes it when the test ends.
func create(t *testing.T, w *scorev1b1.Workload) {
	t.Helper()
	if err := tenant.Create(ctx, w); err != nil {
		t.Fatalf("mallory creates %s/%s: %v", w.Namespace, w.Name, err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the controllers' log ends:\n%s", controllers.LogTail())
		}
		_ = tenant.Delete(ctx, w)
	})
}

// A Workload that names `id: owner.db` must not bind to the Workload owner's private database
// and receive its password, in its namespace or, through a platform's sharing, from another.
// Mallory tries both: each gets an instance of her own.
func TestHostileIDReachesNoColleaguesDatabase(t *testing.T) {
	for _, tc := range []struct {
		name, ns, victim string
		resource         []testenv.ResourceOption
	}{
		{"in the victim's namespace", teamA, "owner", []testenv.ResourceOption{testenv.ResourceID("owner.db")}},
		{"from another namespace, through the platform's sharing", teamB, "shared-owner",
			[]testenv.ResourceOption{testenv.ResourceID("shared-owner.db"), func(r *scorev1b1.Resource) { r.Class = ptrTo("shared") }}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			thief := "thief-of-" + tc.victim
			create(t, testenv.Workload(tc.ns, thief, testenv.WithPort("http", 80), testenv.WithVar("PGPASSWORD", "${resources.db.password}"), testenv.WithResource("db", "postgres", tc.resource...)))
			ready(t, tc.ns, thief, 4*time.Minute)
			mine, theirs := claimOf(t, tc.ns, thief, "db"), claimOf(t, teamA, tc.victim, "db")
			t.Logf("mallory's claim: instance %s in %q (%s); the victim's: %s in %q (%s)", mine.Status.Instance, mine.Status.InstanceNamespace, mine.Status.Provisioner, theirs.Status.Instance, theirs.Status.InstanceNamespace, theirs.Status.Provisioner)
			if tc.ns != teamA && (mine.Status.InstanceNamespace != teamA || theirs.Status.Provisioner != mine.Status.Provisioner) {
				t.Fatal("the platform's sharing did not serve mallory's claim: this case tries nothing")
			}
			if mine.Status.Instance == theirs.Status.Instance {
				t.Fatalf("mallory's claim is the victim's instance %s", theirs.Status.Instance)
			}
			password := secretValue(t, teamA, theirs.Status.SecretRef.Name, "password")
			got := &corev1.Secret{}
			if err := admin.Get(ctx, client.ObjectKey{Namespace: tc.ns, Name: mine.Status.SecretRef.Name}, got); err != nil {
				t.Fatal(err)
			}
			var data [][]byte
			for _, v := range got.Data {
				data = append(data, v)
			}
			if password == "" || contains(password, data...) {
				t.Fatal("the victim's password reached mallory's outputs Secret, which her pods read")
			}
			w := &scorev1b1.Workload{}
			if err := tenant.Get(ctx, client.ObjectKey{Namespace: tc.ns, Name: thief}, w); err != nil {
				t.Fatal(err)
			}
			if contains(password, []byte(fmt.Sprint(w.Status))) {
				t.Fatal("the victim's password is in mallory's Workload status")
			}
			othersUntouched(t)
		})
	}
}

// One 80 KB Workload (a 60 KB annotation, two variables of 400 copies of
// ${metadata.annotations.big}) would, unbounded, take the controllers from 96 to 355 MB and
// stall its plan for ever with no condition. Mallory sends it, and one as large as the API
// server takes: each is refused with SpecInvalid within 15 seconds, the controllers' memory
// grows by less than 50 MB, a Workload created after them is served, and the others stay Ready.
func TestHostilePlaceholdersCannotStallTheControllers(t *testing.T) {
	peak := watchMemory(t)
	before := peak()
	balloon := func(name string, annotation, vars, copies int) *scorev1b1.Workload {
		opts := []testenv.WorkloadOption{testenv.WithAnnotation("big", strings.Repeat("x", annotation))}
		for i := range vars {
			opts = append(opts, testenv.WithVar(fmt.Sprintf("V%d", i), strings.Repeat("${metadata.annotations.big}", copies)))
		}
		return testenv.Workload(teamB, name, opts...)
	}
	// The issue's, and one of about 1.1 MB: a 200 KB annotation (the API server takes 256 KB of
	// them) and 32,000 placeholders, each standing for it.
	create(t, balloon("balloon", 60<<10, 2, 400))
	create(t, balloon("balloon-max", 200<<10, 8, 4000))
	for _, name := range []string{"balloon", "balloon-max"} {
		msg := refused(t, teamB, name, scorev1b1.ReasonSpecInvalid)
		if !strings.Contains(msg, "expand to more than 1 MiB") {
			t.Errorf("%s: %s", name, msg)
		}
	}
	create(t, testenv.Workload(teamB, "after-the-balloons", testenv.WithPort("http", 80)))
	ready(t, teamB, "after-the-balloons", time.Minute)
	grown := peak() - before
	t.Logf("the controllers' resident memory: %d MiB before, at most %d MiB while refusing the balloons (+%d MiB)", before>>20, (before+grown)>>20, grown>>20)
	if grown > 50<<20 {
		t.Errorf("the controllers grew by %d MiB", grown>>20)
	}
	othersUntouched(t)
}

// watchMemory samples the controllers' resident memory every 100 ms until the test ends; the
// function it returns gives the highest sample so far (the first call waits for a second of
// samples).
func watchMemory(t *testing.T) func() int64 {
	t.Helper()
	var mu sync.Mutex
	var high int64
	done := make(chan struct{})
	sample := func() {
		if rss, err := controllers.RSS(); err == nil {
			mu.Lock()
			high = max(high, rss)
			mu.Unlock()
		}
	}
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				sample()
			}
		}
	}()
	t.Cleanup(func() { close(done) })
	time.Sleep(time.Second)
	return func() int64 {
		sample()
		mu.Lock()
		defer mu.Unlock()
		return high
	}
}

// A tenant's route must not claim any host on the shared Gateway. The platform gives every
// namespace its own subdomain (hostnames: *.{namespace}.dev.local): mallory's route under
// team-a's is refused with PolicyViolation, one under her own is made.
func TestHostileRouteOnlyUnderItsOwnDomains(t *testing.T) {
	route := func(name, host string) *scorev1b1.Workload {
		return testenv.Workload(teamB, name, testenv.WithPort("http", 80), testenv.WithResource("route", "route", testenv.ResourceParams(`{"host":"`+host+`","port":"http"}`)))
	}
	create(t, route("squatter", "shop.team-a.dev.local"))
	refused(t, teamB, "squatter", scorev1b1.ReasonPolicyViolation)
	c := claimOf(t, teamB, "squatter", "route")
	if want := "Namespace team-b may not use host name shop.team-a.dev.local: the platform admits *.team-b.dev.local there."; c.Status.Message != want || len(c.Status.Resources) != 0 {
		t.Fatalf("the claim: %q with %d objects, want %q and none", c.Status.Message, len(c.Status.Resources), want)
	}
	create(t, route("front", "front.team-b.dev.local"))
	testenv.Eventually(t, time.Minute, "the route under her own domain made", func() error {
		c, err := findClaim(teamB, "front", "route")
		if err != nil {
			return err
		}
		if c.Status.Phase != scorev1b1.ClaimPhaseBound || len(c.Status.Resources) != 1 {
			return fmt.Errorf("%s: %s", c.Status.Phase, c.Status.Message)
		}
		return nil
	})
	othersUntouched(t)
}

// Params printed into http+api URL templates as they are would let a tenant add path
// segments, a query or a fragment to a request sent with the platform's credentials.
// Mallory's name for her database arrives as one escaped path segment
// with the platform's query; one that climbs out of its path is refused before any request.
func TestHostileParamsStayInTheirURLPart(t *testing.T) {
	create(t, testenv.Workload(teamB, "api-user", testenv.WithResource("db", "api-db", testenv.ResourceParams(`{"name":"a/b?owner=team-a#f"}`))))
	create(t, testenv.Workload(teamB, "api-climber", testenv.WithResource("db", "api-db", testenv.ResourceParams(`{"name":"x/../../admin"}`))))
	testenv.Eventually(t, time.Minute, "the create request sent", func() error {
		for _, r := range api.requests() {
			if strings.HasPrefix(r, "PUT ") {
				return nil
			}
		}
		return errors.New("none yet")
	})
	testenv.Eventually(t, time.Minute, "the climbing name refused", func() error {
		c, err := findClaim(teamB, "api-climber", "db")
		if err != nil {
			return err
		}
		if c.Status.Phase != scorev1b1.ClaimPhaseFailed || !strings.Contains(c.Status.Message, "may not be . or ..") {
			return fmt.Errorf("the claim is %s: %s", c.Status.Phase, c.Status.Message)
		}
		return nil
	})
	for _, r := range api.requests() {
		if r != "PUT /dbs/a%2Fb%3Fowner%3Dteam-a%23f?owner=team-b" {
			t.Errorf("the fake API received %q", r)
		}
	}
	othersUntouched(t)
}

// A registration's kubeconfig must not run an exec plugin inside the controllers, nor send,
// through a tokenFile, a file of their disk (their own ServiceAccount token, say) to the server
// the kubeconfig names. The platform identity tries both against a server that
// records what it is sent: nothing runs, nothing is read, and `score-clusters` says why.
func TestHostileRegistrationRunsNothingAndReadsNoFile(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	server := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		w.WriteHeader(http.StatusUnauthorized)
	}))
	server.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	server.StartTLS()
	t.Cleanup(server.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: server.Certificate().Raw})

	dir := t.TempDir()
	marker, canary := filepath.Join(dir, "the-plugin-ran"), "canary-token-of-the-controllers-disk"
	plugin := filepath.Join(dir, "plugin.sh")
	if err := os.WriteFile(plugin, []byte("#!/bin/sh\ntouch "+marker+"\necho '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"from-the-plugin\"}}'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(canary), 0o600); err != nil {
		t.Fatal(err)
	}
	kubeconfig := func(user string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: %q, certificate-authority-data: %q}}]\nusers: [{name: u, user: %s}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n",
			server.URL, base64.StdEncoding.EncodeToString(ca), user)
	}
	registrations := map[string]string{
		"runs-a-plugin": kubeconfig(fmt.Sprintf("{exec: {apiVersion: client.authentication.k8s.io/v1, command: %q, interactiveMode: Never}}", plugin)),
		"reads-a-file":  kubeconfig(fmt.Sprintf("{tokenFile: %q}", tokenFile)),
	}
	for name, kc := range registrations {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "score-system", Name: name, Labels: map[string]string{scorev1b1.LabelSecretType: scorev1b1.SecretTypeCluster}},
			StringData: map[string]string{clusters.KeyKubeconfig: kc}}
		testenv.Create(t, admin, s)
		t.Cleanup(func() { _ = admin.Delete(ctx, s) })
	}
	cm := &corev1.ConfigMap{}
	testenv.Eventually(t, time.Minute, "both registrations refused in score-clusters", func() error {
		if err := admin.Get(ctx, client.ObjectKey{Namespace: "score-system", Name: clusters.StatusConfigMap}, cm); err != nil {
			return err
		}
		published := clusters.Decode(cm)
		for name := range registrations {
			if st := published[name]; st.Reachable || !strings.Contains(st.Message, "refused") {
				return fmt.Errorf("%s: %+v", name, st)
			}
		}
		return nil
	})
	t.Logf("score-clusters: %v", cm.Data)
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Error("the exec plugin ran inside the controllers")
	}
	mu.Lock()
	defer mu.Unlock()
	if contains(canary, []byte(strings.Join(seen, "\n")), []byte(fmt.Sprint(cm.Data))) {
		t.Error("the token file's content left the controllers")
	}
}

// The catalog's image build runs rootless BuildKit, which needs seccomp and
// AppArmor unconfined: a privileged catalog entry, which a platform opts a namespace into with
// its Pod Security level. In mallory's namespace, which enforces baseline, its pods are refused
// by admission, and nothing of the build runs.
func TestHostileBuildRunsOnlyWhereThePlatformAllowsIt(t *testing.T) {
	create(t, testenv.Workload(teamB, "builds", func(w *scorev1b1.Workload) {
		w.Spec.Containers = map[string]scorev1b1.Container{"main": {Image: "."}}
	}, testenv.WithResource("image", "image", testenv.ResourceParams(`{"context":"https://git.example.test/app.git"}`))))
	testenv.Eventually(t, 2*time.Minute, "the build's pods refused by Pod Security admission", func() error {
		var jobs batchv1.JobList
		if err := admin.List(ctx, &jobs, client.InNamespace(teamB)); err != nil || len(jobs.Items) == 0 {
			return fmt.Errorf("no build Job yet: %v", err)
		}
		var events corev1.EventList
		if err := admin.List(ctx, &events, client.InNamespace(teamB)); err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.InvolvedObject.Kind == "Job" && e.Reason == "FailedCreate" && strings.Contains(e.Message, "violates PodSecurity \"baseline") {
				return nil
			}
		}
		return errors.New("no FailedCreate for Pod Security yet")
	})
	var pods corev1.PodList
	if err := admin.List(ctx, &pods, client.InNamespace(teamB), client.MatchingLabels{"app.kubernetes.io/name": "image-build"}); err != nil || len(pods.Items) != 0 {
		t.Fatalf("%d build pods, %v", len(pods.Items), err)
	}
	othersUntouched(t)
}
