package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/score-orchestrator/score-orchestrator/internal/dashboard"
)

func newDashboardCommand() *cobra.Command {
	var (
		flags                                  clusterFlags
		namespaces                             []string
		address                                string
		port                                   int
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
unless told otherwise, and then answers only to localhost's names.`,
		Example: `  scorectl dashboard                 # then open http://localhost:8001
  scorectl dashboard -n team-a -n team-b --port 9000`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, ns, err := flags.restConfig()
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", net.JoinHostPort(address, fmt.Sprint(port)))
			if err != nil {
				return err
			}
			_, boundPort, _ := net.SplitHostPort(ln.Addr().String())
			opts := dashboard.Options{Config: cfg, Namespaces: namespaces, DefaultNamespace: ns,
				ConfigNamespace: configNamespace, ConfigName: configName, ConfigKey: configKey, Region: region}
			if dashboard.IsLoopback(address) {
				opts.AllowedHosts = dashboard.LoopbackHosts(boundPort)
			} else {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: listening on %s: anyone who reaches it reads the cluster with your rights\n", address)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			srv, err := dashboard.New(ctx, opts)
			if err != nil {
				return err
			}
			host := address
			if dashboard.IsLoopback(address) {
				host = "localhost"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Serving the dashboard on http://%s (Ctrl-C stops it)\n", net.JoinHostPort(host, boundPort))
			return serve(ctx, ln, srv)
		},
	}
	cmd.Flags().StringVar(&flags.kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
	cmd.Flags().StringVar(&flags.context, "context", "", "the kubeconfig context to use")
	cmd.Flags().StringArrayVarP(&namespaces, "namespace", "n", nil, "a namespace to show (repeatable; default: every namespace your rights list, else the context's)")
	cmd.Flags().StringVar(&address, "address", "127.0.0.1", "the address to listen on")
	cmd.Flags().IntVar(&port, "port", 8001, "the port to listen on (0 picks a free one)")
	cmd.Flags().StringVar(&configNamespace, "config-namespace", "score-system", "namespace of the Orchestrator Config ConfigMap")
	cmd.Flags().StringVar(&configName, "config-name", "orchestrator-config", "name of the Orchestrator Config ConfigMap")
	cmd.Flags().StringVar(&configKey, "config-key", "config.yaml", "key of the document in the ConfigMap")
	cmd.Flags().StringVar(&region, "region", "", "the orchestrator's region")
	return cmd
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
