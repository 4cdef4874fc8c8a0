package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"regexp"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/score-orchestrator/score-orchestrator/internal/dashboard"
)

// dashboardTokenEnv gives the dashboard its token (else one is drawn): an environment variable,
// not a flag, so that it does not show in the machine's process list.
const dashboardTokenEnv = "SCORE_DASHBOARD_TOKEN"

func newDashboardCommand() *cobra.Command {
	var (
		flags                                  clusterFlags
		namespaces                             []string
		address                                string
		port                                   int
		acceptHosts                            []string
		configNamespace, configName, configKey string
		region                                 string
	)
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
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Everything that can be refused is, before connecting or opening the port.
			loopback := dashboard.IsLoopback(address)
			patterns, err := dashboard.HostPatterns(acceptHosts)
			if err != nil {
				return fmt.Errorf("--accept-hosts: %w", err)
			}
			token := os.Getenv(dashboardTokenEnv)
			if token != "" {
				if err := dashboard.CheckToken(token); err != nil {
					return fmt.Errorf("$%s: %w", dashboardTokenEnv, err)
				}
			}
			switch {
			case loopback && len(acceptHosts) > 0:
				return errors.New("--accept-hosts is for an --address off loopback: on loopback the dashboard answers only to localhost's names")
			case !loopback && len(acceptHosts) == 0:
				return fmt.Errorf("listening on %q would serve other machines: name the host names the dashboard is reached by with --accept-hosts "+
					`(regular expressions, for example --accept-hosts 'dash\.example\.com'), so that no web site can reach it through DNS rebinding`, address)
			}
			cfg, ns, err := flags.restConfig()
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", net.JoinHostPort(address, fmt.Sprint(port)))
			if err != nil {
				return err
			}
			_, boundPort, _ := net.SplitHostPort(ln.Addr().String())
			opts := dashboard.Options{Config: cfg, Namespaces: namespaces, DefaultNamespace: ns, Token: token,
				ConfigNamespace: configNamespace, ConfigName: configName, ConfigKey: configKey, Region: region}
			drawn := false
			if loopback {
				opts.AllowedHosts = dashboard.LoopbackHosts(boundPort)
			} else {
				opts.AcceptHosts = patterns
				if opts.Token == "" {
					opts.Token, drawn = dashboard.NewToken(), true
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: listening on %s: whoever has the dashboard's token reads the cluster with your rights, "+
					"and the connection is not encrypted (put it behind TLS or reach it through an SSH tunnel on a network you do not trust)\n", address)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			srv, err := dashboard.New(ctx, opts)
			if err != nil {
				return err
			}
			url := "http://" + dashboardHost(address, boundPort, acceptHosts)
			switch {
			case drawn:
				// The one place the token is written: the address the user opens.
				url += "/?token=" + opts.Token
			case opts.Token != "":
				url += " (add ?token= and the token in $" + dashboardTokenEnv + ")"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Serving the dashboard on %s (Ctrl-C stops it)\n", url)
			return serve(ctx, ln, srv)
		},
	}
	cmd.Flags().StringVar(&flags.kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
	cmd.Flags().StringVar(&flags.context, "context", "", "the kubeconfig context to use")
	cmd.Flags().StringArrayVarP(&namespaces, "namespace", "n", nil, "a namespace to show (repeatable; default: every namespace your rights list, else the context's)")
	cmd.Flags().StringVar(&address, "address", "127.0.0.1", "the address to listen on")
	cmd.Flags().IntVar(&port, "port", 8001, "the port to listen on (0 picks a free one)")
	cmd.Flags().StringSliceVar(&acceptHosts, "accept-hosts", nil, "off loopback, the host names the dashboard answers to: regular expressions, each matching a whole name (comma-separated or repeated; required with an --address off loopback)")
	cmd.Flags().StringVar(&configNamespace, "config-namespace", "score-system", "namespace of the Orchestrator Config ConfigMap")
	cmd.Flags().StringVar(&configName, "config-name", "orchestrator-config", "name of the Orchestrator Config ConfigMap")
	cmd.Flags().StringVar(&configKey, "config-key", "config.yaml", "key of the document in the ConfigMap")
	cmd.Flags().StringVar(&region, "region", "", "the orchestrator's region")
	return cmd
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
