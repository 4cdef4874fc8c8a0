// Package dashboard serves scorectl dashboard: a local web view of the fleet and of each
// Workload's graph, kept live by watches and pushed to the page as server-sent events. It reads
// the cluster with the user's own kubeconfig, like kubectl proxy, so it shows exactly what the
// user's rights show; what they hide, the page says. It never reads a Secret. The pages are
// rendered here (html/template) from internal/cli/dashboardview; the one script in the page only
// swaps in what the server pushes and filters the table.
package dashboard

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"regexp"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/score-orchestrator/score-orchestrator/internal/scheme"
)

//go:embed assets
var assets embed.FS

// Options configure a Server.
type Options struct {
	// Config is the user's: every read is made with it.
	Config *rest.Config
	// Namespaces are where to look for Workloads. Empty means every namespace when the user may
	// list Workloads across namespaces, else DefaultNamespace.
	Namespaces []string
	// DefaultNamespace is the kubeconfig context's namespace.
	DefaultNamespace string
	// The Orchestrator Config's ConfigMap, for the decision trace, and the orchestrator's region.
	ConfigNamespace, ConfigName, ConfigKey, Region string
	// AllowedHosts are Host headers served as written, and AcceptHosts patterns of the host
	// names served (HostPatterns); a server answers to nothing else, so that a web page elsewhere
	// cannot read the cluster through it by DNS rebinding (kubectl proxy's --accept-hosts). A
	// server bound to loopback answers to its own names (LoopbackHosts); one off loopback, to
	// the names its user gave.
	AllowedHosts []string
	AcceptHosts  []*regexp.Regexp
	// Token, when set, is asked of every request (CheckToken says which tokens will do): in the
	// address once (?token=, answered with a cookie and the address without it), then in the
	// cookie, or as a bearer token. A server off loopback needs one.
	Token string
	// MaxStreams bounds the live pages served at once (default DefaultMaxStreams).
	MaxStreams int
	// Coalesce is how long a stream waits after a change for the ones that follow it before it
	// renders again (default 150 ms).
	Coalesce time.Duration
}

// Server is the dashboard's HTTP handler.
type Server struct {
	opts  Options
	pages *template.Template
	mux   *http.ServeMux
	// c reads the API server directly; the shared cache, where the user may list and watch a
	// kind across the whole scope, serves every page from one watch per kind.
	c      client.WithWatch
	shared sharedCache
	// rights are the API server's recent answers about what the user may do.
	rights *rightsCache
	// token admits requests when the server has one (nil: it has none).
	token *tokenGuard
	// streams holds a place for each stream open, up to MaxStreams.
	streams chan struct{}
}

// New connects with opts.Config, decides the scope with the user's rights, starts the shared
// cache (until ctx ends) and builds the handler.
func New(ctx context.Context, opts Options) (*Server, error) {
	if opts.Config == nil {
		return nil, errors.New("dashboard: no client configuration")
	}
	sch := scheme.New()
	c, err := client.NewWithWatch(opts.Config, client.Options{Scheme: sch})
	if err != nil {
		return nil, fmt.Errorf("connecting to the cluster: %w", err)
	}
	s, err := newServer(opts, c)
	if err != nil {
		return nil, err
	}
	if err := s.startCache(ctx, sch); err != nil {
		return nil, err
	}
	return s, nil
}

// newServer builds the handler around c, without the shared cache: until startCache fills it,
// every read goes to c.
func newServer(opts Options, c client.WithWatch) (*Server, error) {
	if len(opts.AllowedHosts) == 0 && len(opts.AcceptHosts) == 0 {
		return nil, errors.New("dashboard: no host name to answer to")
	}
	if opts.Token != "" {
		if err := CheckToken(opts.Token); err != nil {
			return nil, err
		}
	}
	if opts.Coalesce == 0 {
		opts.Coalesce = 150 * time.Millisecond
	}
	if opts.MaxStreams == 0 {
		opts.MaxStreams = DefaultMaxStreams
	}
	pages, err := template.New("").Funcs(template.FuncMap{"short": short, "stamp": stamp}).ParseFS(assets, "assets/*.html")
	if err != nil {
		return nil, err
	}
	s := &Server{opts: opts, c: c, pages: pages, mux: http.NewServeMux(), rights: newRightsCache(time.Now),
		token: newTokenGuard(opts.Token), streams: make(chan struct{}, opts.MaxStreams)}
	static, _ := fs.Sub(assets, "assets/static")
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	s.mux.HandleFunc("GET /{$}", s.fleetPage)
	s.mux.HandleFunc("GET /stream/fleet", s.streamGuard(s.fleetStream))
	s.mux.HandleFunc("GET /workloads/{namespace}/{name}", s.workloadPage)
	s.mux.HandleFunc("GET /stream/workloads/{namespace}/{name}", s.streamGuard(s.workloadStream))
	return s, nil
}

// LoopbackHosts are the Host headers a server bound to a loopback address answers to.
func LoopbackHosts(port string) []string {
	var out []string
	for _, h := range []string{"localhost", "127.0.0.1", "[::1]"} {
		out = append(out, h, h+":"+port)
	}
	return out
}

// IsLoopback reports whether host (a name or an address) is on this machine only.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ServeHTTP serves the pages to a request for a host name the server answers to, carrying its
// token when it has one.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Set before any refusal: every answer, an error page too, forbids framing.
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	if !s.answersTo(r.Host) {
		msg := "this dashboard answers only to " + strings.Join(s.opts.AllowedHosts, ", ")
		if len(s.opts.AcceptHosts) > 0 {
			msg = "this dashboard answers only to the host names its --accept-hosts names"
		}
		http.Error(w, msg, http.StatusForbidden)
		return
	}
	if s.token != nil && !s.token.admit(w, r) {
		return
	}
	s.mux.ServeHTTP(w, r)
}

// page is the layout's data: a title, the controls above the live region, the region's first
// content and the stream that replaces it.
type page struct {
	Title, Identity, Stream string
	Controls, Content       template.HTML
}

func (s *Server) render(name string, data any) (template.HTML, error) {
	var b bytes.Buffer
	if err := s.pages.ExecuteTemplate(&b, name, data); err != nil {
		return "", err
	}
	return template.HTML(b.String()), nil //nolint:gosec // html/template escaped it
}

func (s *Server) writePage(w http.ResponseWriter, r *http.Request, p page) {
	p.Identity = s.identity(r.Context())
	var b bytes.Buffer
	if err := s.pages.ExecuteTemplate(&b, "layout", p); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(b.Bytes())
}

func (s *Server) fleetPage(w http.ResponseWriter, r *http.Request) {
	content, err := s.fleetFragment(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	controls, _ := s.render("fleet-controls", nil)
	s.writePage(w, r, page{Title: "Workloads", Stream: "/stream/fleet", Controls: controls, Content: content})
}

func (s *Server) workloadPage(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	content, err := s.workloadFragment(r.Context(), ns, name)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	s.writePage(w, r, page{Title: ns + "/" + name, Stream: "/stream/workloads/" + ns + "/" + name, Content: content})
}

func (s *Server) fleetStream(w http.ResponseWriter, r *http.Request) {
	s.stream(w, r, s.fleetInterest(), s.fleetFragment)
}

func (s *Server) workloadStream(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	s.stream(w, r, s.workloadInterest(r.Context(), ns, name), func(ctx context.Context) (template.HTML, error) {
		return s.workloadFragment(ctx, ns, name)
	})
}

// short cuts s to n runes with an ellipsis, for the graph's boxes (the table beside it has the
// whole name).
func short(n int, s string) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// stamp is a time as UTC to the second: absolute, so that a page renders the same until
// something changed.
func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}
