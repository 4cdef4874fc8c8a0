// Command pprof-slices says how a kube-apiserver CPU profile divides into kinds of work: CEL,
// schema validation, the schema coercion of custom resources, managed fields, audit,
// authentication and authorization, admission, watch fan-out, JSON, protobuf, storage,
// HTTP/TLS, garbage collection. It reads `go tool pprof -traces` on stdin:
//
//	go tool pprof -traces OUT.kube-apiserver-load/*.pprof | go run ./hack/pprof-slices
//
// Each sample goes to the first slice (in the order below: purposes before mechanisms) with a
// frame in its stack, so the shares sum to 100 %; a slice's inclusive share counts every
// sample with a frame of it, as pprof's -focus does. The patterns leave out the frames that
// wrap whole requests (the filter chain, the etcd3 store's GuaranteedUpdate, the cache
// delegator), so a sample goes to the most specific thing it was doing. --focus keeps only
// the samples with a frame it matches (e.g. 'customresource.\(\*StatusREST\).Update$').
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
)

type slice struct {
	name string
	re   *regexp.Regexp
}

var slices = []slice{
	{"CEL", regexp.MustCompile(`github\.com/google/cel-go|apiextensions-apiserver/pkg/apiserver/schema/cel|k8s\.io/apiserver/pkg/cel`)},
	{"schema validation (OpenAPI, ratcheting)", regexp.MustCompile(`k8s\.io/kube-openapi/pkg/validation|apiextensions-apiserver/pkg/apiserver/validation|apiextensions-apiserver/pkg/apiserver/schema/listtype|customresource\.customResourceValidator`)},
	{"schema coercion on decode (objectmeta, pruning, defaulting)", regexp.MustCompile(`apiextensions-apiserver/pkg/apiserver/schema/(pruning|defaulting|objectmeta)|apiextensions-apiserver/pkg/apiserver\.\(\*unstructuredSchemaCoercer\)`)},
	{"managed fields", regexp.MustCompile(`sigs\.k8s\.io/structured-merge-diff|k8s\.io/apimachinery/pkg/util/managedfields|endpoints/handlers/fieldmanager|k8s\.io/apiserver/pkg/util/managedfields`)},
	{"audit", regexp.MustCompile(`k8s\.io/apiserver/pkg/audit\.(LogRequestObject|LogResponseObject|LogRequestMetadata|LogRequestPatch|\(\*AuditContext\)\.ProcessEventStage|ObservePolicyLevel|GetAuditIDTruncated|AddAuditAnnotations?)|k8s\.io/apiserver/pkg/audit/|k8s\.io/apiserver/plugin/pkg/audit|natefinch/lumberjack`)},
	{"authentication, authorization", regexp.MustCompile(`k8s\.io/apiserver/pkg/authentication/|k8s\.io/apiserver/pkg/authorization/|k8s\.io/kubernetes/plugin/pkg/auth/|k8s\.io/kubernetes/pkg/kubeapiserver/authorizer|^crypto/x509`)},
	{"admission", regexp.MustCompile(`k8s\.io/apiserver/pkg/admission|k8s\.io/kubernetes/plugin/pkg/admission`)},
	{"watch fan-out", regexp.MustCompile(`cacher\.\(\*Cacher\)\.(dispatchEvents|dispatchEvent|processEvent|startDispatching|finishDispatching|Watch)|cacher\.\(\*cacheWatcher\)|cacher\.\(\*watchCache\)|cacher\.(NewCacherFromConfig\.func1|newCachingObject|\(\*cachingObject\))|endpoints/handlers\.\(\*WatchServer\)|endpoints/handlers\.serveWatch|k8s\.io/apimachinery/pkg/watch\.`)},
	{"JSON of custom resources (unstructured)", regexp.MustCompile(`unstructured\.|unstructuredJSONScheme|UnstructuredJSONScheme|sigs\.k8s\.io/json`)},
	{"JSON, other", regexp.MustCompile(`^encoding/json|json-iterator|k8s\.io/apimachinery/pkg/runtime/serializer/json`)},
	{"protobuf (built-in kinds)", regexp.MustCompile(`k8s\.io/apimachinery/pkg/runtime/serializer/protobuf|\)\.(Marshal|Unmarshal|MarshalToSizedBuffer|Size)$|gogo/protobuf|google\.golang\.org/protobuf`)},
	{"storage (etcd3, etcd client, gRPC)", regexp.MustCompile(`k8s\.io/apiserver/pkg/storage/etcd3|go\.etcd\.io/etcd|google\.golang\.org/grpc|k8s\.io/apiserver/pkg/storage/value`)},
	{"HTTP/2, TLS, syscalls", regexp.MustCompile(`^crypto/|golang\.org/x/net/http2\.\(\*(serverConn|Framer|ClientConn|clientStream)\)\.(writeFrameAsync|readFrames|readLoop|Read|Write)|golang\.org/x/net/http2/hpack|^net\.\(\*conn\)|^net/http\.\(\*conn\)\.(readRequest|finalFlush)|internal/poll|^syscall|internal/runtime/syscall`)},
	{"garbage collection (background)", regexp.MustCompile(`^runtime\.gcBgMarkWorker|^runtime\.bgsweep|^runtime\.bgscavenge`)},
}

const other = "other"

// sample is one stack of the traces and its CPU time.
type sample struct {
	cpu    time.Duration
	frames []string // leaf first
}

// parseTraces reads `go tool pprof -traces`: a header, then stacks separated by lines of
// dashes, the first line of each with the sample's value.
func parseTraces(r io.Reader) ([]sample, error) {
	var out []sample
	var cur *sample
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "-----------+") {
			if cur != nil && len(cur.frames) > 0 {
				out = append(out, *cur)
			}
			cur = &sample{}
			continue
		}
		if cur == nil || strings.TrimSpace(line) == "" {
			continue
		}
		text := strings.TrimSpace(line)
		if len(cur.frames) == 0 {
			value, rest, ok := strings.Cut(text, " ")
			d, err := parseValue(value)
			if !ok || err != nil {
				return nil, fmt.Errorf("a stack that starts without its value: %q", line)
			}
			cur.cpu, text = d, strings.TrimSpace(rest)
		}
		cur.frames = append(cur.frames, strings.TrimSuffix(text, " (inline)"))
	}
	if cur != nil && len(cur.frames) > 0 {
		out = append(out, *cur)
	}
	return out, sc.Err()
}

// parseValue reads pprof's durations (10ms, 1.20s, 500us).
func parseValue(s string) (time.Duration, error) {
	s = strings.Replace(s, "µs", "us", 1)
	for _, u := range []struct {
		suffix string
		unit   time.Duration
	}{{"ns", time.Nanosecond}, {"us", time.Microsecond}, {"ms", time.Millisecond}, {"s", time.Second}} {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			f, err := strconv.ParseFloat(v, 64)
			return time.Duration(f * float64(u.unit)), err
		}
	}
	return 0, fmt.Errorf("not a duration: %q", s)
}

// shares is each slice's CPU: exclusive (the first slice of the list the sample has a frame
// of) and inclusive (any frame of it).
type shares struct {
	total, all           time.Duration
	exclusive, inclusive map[string]time.Duration
}

func divide(samples []sample, focus *regexp.Regexp) shares {
	s := shares{exclusive: map[string]time.Duration{}, inclusive: map[string]time.Duration{}}
	for _, smp := range samples {
		s.all += smp.cpu
		if focus != nil && !anyFrame(smp.frames, focus) {
			continue
		}
		s.total += smp.cpu
		first := other
		for _, sl := range slices {
			if anyFrame(smp.frames, sl.re) {
				s.inclusive[sl.name] += smp.cpu
				if first == other {
					first = sl.name
				}
			}
		}
		s.exclusive[first] += smp.cpu
	}
	return s
}

func anyFrame(frames []string, re *regexp.Regexp) bool {
	for _, f := range frames {
		if re.MatchString(f) {
			return true
		}
	}
	return false
}

func (s shares) print(w io.Writer) {
	pct := func(d time.Duration) float64 { return 100 * d.Seconds() / s.total.Seconds() }
	fmt.Fprintf(w, "%.2f s sampled", s.total.Seconds())
	if s.total != s.all {
		fmt.Fprintf(w, " under the focus, %.1f %% of %.2f s", 100*s.total.Seconds()/s.all.Seconds(), s.all.Seconds())
	}
	fmt.Fprintf(w, "\n%-60s %9s %9s %8s\n", "slice", "exclusive", "inclusive", "CPU s")
	for _, sl := range append(slices, slice{name: other}) {
		fmt.Fprintf(w, "%-60s %8.1f%% %8.1f%% %8.2f\n", sl.name, pct(s.exclusive[sl.name]), pct(s.inclusive[sl.name]), s.exclusive[sl.name].Seconds())
	}
}

func main() {
	focus := flag.String("focus", "", "only the samples with a frame matching this regular expression")
	flag.Parse()
	var re *regexp.Regexp
	if *focus != "" {
		var err error
		if re, err = regexp.Compile(*focus); err != nil {
			fmt.Fprintln(os.Stderr, "pprof-slices:", err)
			os.Exit(2)
		}
	}
	samples, err := parseTraces(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pprof-slices:", err)
		os.Exit(1)
	}
	if len(samples) == 0 {
		fmt.Fprintln(os.Stderr, "pprof-slices: no samples on stdin (go tool pprof -traces PROFILE | pprof-slices)")
		os.Exit(1)
	}
	divide(samples, re).print(os.Stdout)
}
