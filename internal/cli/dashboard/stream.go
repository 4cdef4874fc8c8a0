package dashboard

import (
	"context"
	"html/template"
	"net/http"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/termtext"
)

// watchSpec is one watch a stream keeps open: the list kind and its options.
type watchSpec struct {
	list func() client.ObjectList
	opts []client.ListOption
}

// keepAlive is how often an idle stream sends a comment, so that a closed browser tab ends its
// watches and proxies do not cut a quiet connection.
const keepAlive = 20 * time.Second

// stream serves server-sent events: the fragment build renders, again after every change in
// its interest (coalesced), sent only when it differs from the last one sent.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, in interest, build func(context.Context) (template.HTML, error)) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming is not supported here", http.StatusInternalServerError)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()

	changed := make(chan struct{}, 1)
	changed <- struct{}{}
	defer s.shared.hub.subscribe(&subscription{match: in.match, changed: changed})()
	for _, spec := range in.watches {
		go s.watch(ctx, spec, changed)
	}
	var last template.HTML
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if _, err := w.Write([]byte(": keep-alive\n\n")); err != nil {
				return
			}
			flusher.Flush()
			continue
		case <-changed:
		}
		// Changes come in bursts (a status patch, then the events about it): render once.
		select {
		case <-ctx.Done():
			return
		case <-time.After(s.opts.Coalesce):
		}
		select {
		case <-changed:
		default:
		}
		html, err := build(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			html = template.HTML(`<p class="notice error">` + template.HTMLEscapeString("Reading the cluster failed: "+termtext.Escape(err.Error())) + `</p>`) //nolint:gosec // escaped
		}
		if html == last {
			continue
		}
		last = html
		if _, err := w.Write(event("update", string(html))); err != nil {
			return
		}
		flusher.Flush()
	}
}

// event is one server-sent event; each line of data is its own data field. A line ends at CRLF,
// CR or LF, as the browser reads the stream: splitting at LF alone would let a CR in the data (a
// status message is the Workload owner's to write) end a line early and start a field of its own.
func event(name, data string) []byte {
	var b strings.Builder
	b.WriteString("event: " + name + "\n")
	for _, line := range strings.Split(lineEnds.Replace(data), "\n") {
		b.WriteString("data: " + line + "\n")
	}
	b.WriteString("\n")
	return []byte(b.String())
}

// lineEnds makes every line end of an event stream an LF.
var lineEnds = strings.NewReplacer("\r\n", "\n", "\r", "\n")

// watch keeps one watch open until ctx ends and signals changed on every event. A watch the API
// server ends is opened again without a resource version: its first events announce what
// exists, so a change made while it was closed is not missed.
func (s *Server) watch(ctx context.Context, spec watchSpec, changed chan<- struct{}) {
	backoff := time.Second
	for ctx.Err() == nil {
		wi, err := s.c.Watch(ctx, spec.list(), spec.opts...)
		if err != nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 30*time.Second)
			continue
		}
		backoff = time.Second
		for range wi.ResultChan() {
			signal(changed)
		}
		wi.Stop()
		signal(changed) // the next watch re-announces everything: say so once
	}
}

// interest is what wakes a stream: changes the shared cache sees that match accepts, and its
// own watches for what the cache does not hold.
type interest struct {
	match   func(client.Object) bool
	watches []watchSpec
}

func (s *Server) fleetInterest() interest {
	in := interest{match: func(o client.Object) bool {
		switch o.(type) {
		case *scorev1b1.Workload, *scorev1b1.WorkloadPlan:
			return true
		}
		return false
	}}
	if !s.shared.resources["workloads"] {
		_ = inScope(s.shared.scope, func(_ string, opts ...client.ListOption) error {
			in.watches = append(in.watches, watchSpec{list: func() client.ObjectList { return &scorev1b1.WorkloadList{} }, opts: opts})
			return nil
		})
	}
	return in
}

func (s *Server) workloadInterest(ctx context.Context, ns, name string) interest {
	rights := s.workloadRights(ctx, ns, name)
	named := []client.ListOption{client.InNamespace(ns), client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", name)}}
	var in interest
	// each kind comes from the shared cache when it holds it here, else from a watch of its own
	kinds := []struct {
		resource string
		readable bool
		list     func() client.ObjectList
		opts     []client.ListOption
	}{
		{"workloads", true, func() client.ObjectList { return &scorev1b1.WorkloadList{} }, named},
		{"resourceclaims", rights.claims, func() client.ObjectList { return &scorev1b1.ResourceClaimList{} },
			[]client.ListOption{client.InNamespace(ns), client.MatchingLabels{scorev1b1.LabelWorkload: name}}},
		{"workloadplans", rights.plan, func() client.ObjectList { return &scorev1b1.WorkloadPlanList{} }, named},
		{"workloadexposures", rights.exposure, func() client.ObjectList { return &scorev1b1.WorkloadExposureList{} }, named},
	}
	for _, k := range kinds {
		if k.readable && !s.shared.cached(k.resource, ns) {
			in.watches = append(in.watches, watchSpec{list: k.list, opts: k.opts})
		}
	}
	in.match = func(o client.Object) bool {
		if o.GetNamespace() != ns {
			return false
		}
		if _, claim := o.(*scorev1b1.ResourceClaim); claim {
			return o.GetLabels()[scorev1b1.LabelWorkload] == name
		}
		return o.GetName() == name
	}
	if rights.events {
		in.watches = append(in.watches, watchSpec{list: func() client.ObjectList { return &corev1.EventList{} },
			opts: []client.ListOption{client.InNamespace(ns), client.MatchingFieldsSelector{Selector: workloadEvents(name)}}})
	}
	if rights.config {
		in.watches = append(in.watches, watchSpec{list: func() client.ObjectList { return &corev1.ConfigMapList{} },
			opts: []client.ListOption{client.InNamespace(s.opts.ConfigNamespace), client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", s.opts.ConfigName)}}})
	}
	return in
}
