package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"regexp"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/score-orchestrator/score-orchestrator/internal/cli/dashboard"
)

// dashboardTokenEnv gives the dashboard its token (else one is drawn): an environment variable,
// not a flag, so that it does not show in the machine's process list.
const dashboardTokenEnv = "SCORE_DASHBOARD_TOKEN"

func newDashboardCommand() *cobra.Command {
	var o dashboardOptions
	cmd := &cobra.Command{
		Use:   "dashboard",
		Short: "Serve a live web view of the Workloads, with your own rights",
		Long: `Serve, on this machine, a web view of the fleet and of each Workload's graph (its claims and
what was provisioned for them, its plan and the objects applied, its exposure and endpoint), with
its conditions, events and the platform's decision trace. Changes arrive in the page as they
happen, through watches.

The dashboard reads the cluster with your kubeconfig, like kubectl proxy: it shows exactly what
your rights show, and says what they hide. It never reads a Secret. It listens on localhost
unless told otherwise, and then answers only to localhost's names.

On another --address, anyone who reaches the port could read the cluster with your rights, so it
needs --accept-hosts, the host names it is reached by (regular expressions, each matching a whole
name, as kubectl proxy's), and asks every request for a token: a random one, in the address it
prints once, or the one in $` + dashboardTokenEnv + ` (at least 22 characters).`,
		Example: `  scorectl dashboard                 # then open http://localhost:8001
  scorectl dashboard -n team-a -n team-b --port 9000
  scorectl dashboard --address 0.0.0.0 --accept-hosts 'dash\.example\.com'   # open the address it prints`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	cmd.Flags().StringVar(&o.flags.kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
	cmd.Flags().StringVar(&o.flags.context, "context", "", "the kubeconfig context to use")
	cmd.Flags().StringArrayVarP(&o.namespaces, "namespace", "n", nil, "a namespace to show (repeatable; default: every namespace your rights list, else the context's)")
	cmd.Flags().StringVar(&o.address, "address", "127.0.0.1", "the address to listen on")
	cmd.Flags().IntVar(&o.port, "port", 8001, "the port to listen on (0 picks a free one)")
	cmd.Flags().StringSliceVar(&o.acceptHosts, "accept-hosts", nil, "off loopback, the host names the dashboard answers to: regular expressions, each matching a whole name (comma-separated or repeated; required with an --address off loopback)")
	cmd.Flags().StringVar(&o.configNamespace, "config-namespace", "score-system", "namespace of the Orchestrator Config ConfigMap")
	cmd.Flags().StringVar(&o.configName, "config-name", "orchestrator-config", "name of the Orchestrator Config ConfigMap")
	cmd.Flags().StringVar(&o.configKey, "config-key", "config.yaml", "key of the document in the ConfigMap")
	cmd.Flags().StringVar(&o.region, "region", "", "the orchestrator's region")
	return cmd
}

// dashboardOptions are scorectl dashboard's flags.
type dashboardOptions struct {
	flags                                  clusterFlags
	namespaces                             []string
	address                                string
	port                                   int
	acceptHosts                            []string
	configNamespace, configName, configKey string
	region                                 string
}

// run serves the dashboard until SIGINT or SIGTERM.
func (o *dashboardOptions) run(cmd *cobra.Command) error {
	// Everything that can be refused is, before connecting or opening the port.
	patterns, token, err := o.check()
	if err != nil {
		return err
	}
	cfg, ns, err := o.flags.restConfig()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(o.address, fmt.Sprint(o.port)))
	if err != nil {
		return err
	}
	_, boundPort, _ := net.SplitHostPort(ln.Addr().String())
	opts := dashboard.Options{Config: cfg, Namespaces: o.namespaces, DefaultNamespace: ns, Token: token,
		ConfigNamespace: o.configNamespace, ConfigName: o.configName, ConfigKey: o.configKey, Region: o.region}
	drawn := o.guard(cmd.ErrOrStderr(), &opts, boundPort, patterns)
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	srv, err := dashboard.New(ctx, opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "Serving the dashboard on %s (Ctrl-C stops it)\n", o.url(boundPort, opts.Token, drawn))
	return serve(ctx, ln, srv)
}

// check refuses what the flags and $SCORE_DASHBOARD_TOKEN cannot serve: host patterns that do
// not compile, a token too weak, --accept-hosts on loopback, and an address off loopback
// without them. It returns the patterns and the token given.
func (o *dashboardOptions) check() ([]*regexp.Regexp, string, error) {
	loopback := dashboard.IsLoopback(o.address)
	patterns, err := dashboard.HostPatterns(o.acceptHosts)
	if err != nil {
		return nil, "", fmt.Errorf("--accept-hosts: %w", err)
	}
	token := os.Getenv(dashboardTokenEnv)
	if token != "" {
		if err := dashboard.CheckToken(token); err != nil {
			return nil, "", fmt.Errorf("$%s: %w", dashboardTokenEnv, err)
		}
	}
	switch {
	case loopback && len(o.acceptHosts) > 0:
		return nil, "", errors.New("--accept-hosts is for an --address off loopback: on loopback the dashboard answers only to localhost's names")
	case !loopback && len(o.acceptHosts) == 0:
		return nil, "", fmt.Errorf("listening on %q would serve other machines: name the host names the dashboard is reached by with --accept-hosts "+
			`(regular expressions, for example --accept-hosts 'dash\.example\.com'), so that no web site can reach it through DNS rebinding`, o.address)
	}
	return patterns, token, nil
}

// guard sets who the server answers: on loopback, localhost's names on the port bound; off
// loopback, the accepted hosts with a token, drawn when none was given (drawn is true then),
// with a warning on stderr.
func (o *dashboardOptions) guard(stderr io.Writer, opts *dashboard.Options, boundPort string, patterns []*regexp.Regexp) (drawn bool) {
	if dashboard.IsLoopback(o.address) {
		opts.AllowedHosts = dashboard.LoopbackHosts(boundPort)
		return false
	}
	opts.AcceptHosts = patterns
	if opts.Token == "" {
		opts.Token, drawn = dashboard.NewToken(), true
	}
	fmt.Fprintf(stderr, "warning: listening on %s: whoever has the dashboard's token reads the cluster with your rights, "+
		"and the connection is not encrypted (put it behind TLS or reach it through an SSH tunnel on a network you do not trust)\n", o.address)
	return drawn
}

// url is the address to open, with the token when it was drawn: the one place it is written.
func (o *dashboardOptions) url(boundPort, token string, drawn bool) string {
	url := "http://" + dashboardHost(o.address, boundPort, o.acceptHosts)
	switch {
	case drawn:
		url += "/?token=" + token
	case token != "":
		url += " (add ?token= and the token in $" + dashboardTokenEnv + ")"
	}
	return url
}

// dashboardHost is the host and port of the address to open: localhost on loopback; else the
// first --accept-hosts pattern that is a plain name, the address, or this machine's name when the
// address is every interface's.
func dashboardHost(address, port string, acceptHosts []string) string {
	host := address
	switch {
	case dashboard.IsLoopback(address):
		host = "localhost"
	default:
		for _, p := range acceptHosts {
			if re, err := regexp.Compile(p); err == nil {
				if name, whole := re.LiteralPrefix(); whole && name != "" {
					return net.JoinHostPort(name, port)
				}
			}
		}
		if ip := net.ParseIP(address); address == "" || (ip != nil && ip.IsUnspecified()) {
			if name, err := os.Hostname(); err == nil {
				host = name
			}
		}
	}
	return net.JoinHostPort(host, port)
}

// serve serves h on ln until ctx ends, then lets open pages go within a few seconds.
func serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
