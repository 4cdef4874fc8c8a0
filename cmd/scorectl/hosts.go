package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/score-orchestrator/score-orchestrator/internal/fleet/hosts"
	"github.com/score-orchestrator/score-orchestrator/internal/termtext"
)

func newHostCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "host",
		Short: "Register, list and remove the Docker hosts the Docker runtime's agents run on",
		Long: `A Docker host runs score-docker-agent, which runs the docker plans of the namespaces the
platform gives the host (each namespace has one host). Its identity on the hub is the
ServiceAccount score-host-NAME in score-system: it reads plans, exposures and outputs Secrets
in those namespaces only, writes only the status of the docker plans placed on its host (or on
none) and of docker exposures, and of a plan nothing but its finalizers. The Docker socket
never leaves the host.`,
	}
	cmd.AddCommand(newHostAddCommand(), newHostListCommand(), newHostRemoveCommand())
	return cmd
}

func newHostAddCommand() *cobra.Command {
	var flags clusterFlags
	var r hosts.Registration
	var output string
	cmd := &cobra.Command{
		Use:   "add NAME --namespace NS ... --address ADDRESS --output agent.kubeconfig",
		Short: "Register a Docker host and write its agent's kubeconfig (run again to rotate its token)",
		Long: `Creates, on the hub, the host's identity and its rights in the namespaces it serves, the
admission policy score-docker-host that narrows every agent's writes to its own plans, the
host's Lease (its agent renews it while the Docker Engine answers), and a token valid for a
year, bound to a Secret score-host-NAME-token-*: deleting it revokes the token. Run it again to
rotate the token (the previous one is revoked once the new one exists) or to change the
namespaces. The kubeconfig written carries the token: copy it to the host, and run there
  score-docker-agent --kubeconfig agent.kubeconfig --host NAME --address ADDRESS --namespaces NS,...`,
		Example: `  scorectl host add edge-1 --namespace shop --address 10.0.0.12 --output edge-1.kubeconfig`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r.Name = args[0]
			if err := r.Validate(); err != nil {
				return err
			}
			if output == "" {
				return fmt.Errorf("--output names the file the agent's kubeconfig is written to")
			}
			cfg, _, err := flags.restConfig()
			if err != nil {
				return err
			}
			c, _, err := flags.connect()
			if err != nil {
				return err
			}
			kubeconfig, err := hosts.Register(cmd.Context(), cfg, c, r)
			if err != nil {
				return err
			}
			if err := os.WriteFile(output, kubeconfig, 0o600); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "host %s registered; its agent's kubeconfig is %s. On the host:\n  score-docker-agent --kubeconfig %s --host %s --address %s --namespaces %s\n",
				r.Name, output, output, r.Name, r.Address, strings.Join(r.Namespaces, ","))
			return nil
		},
	}
	// Not flags.bind: --namespace here is a namespace the host serves.
	cmd.Flags().StringVar(&flags.kubeconfig, "kubeconfig", "", "the hub's kubeconfig (default: $KUBECONFIG or ~/.kube/config)")
	cmd.Flags().StringVar(&flags.context, "context", "", "the hub kubeconfig's context")
	cmd.Flags().StringArrayVar(&r.Namespaces, "namespace", nil, "a namespace the host serves (repeatable)")
	cmd.Flags().StringVar(&r.Address, "address", "", "the host address its Workloads' ports are published on")
	cmd.Flags().StringVarP(&output, "output", "o", "", "where to write the agent's kubeconfig (mode 0600)")
	return cmd
}

func newHostListCommand() *cobra.Command {
	var flags clusterFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the Docker hosts: namespaces, address, whether their agent says the Engine answers",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, _, err := flags.connect()
			if err != nil {
				return err
			}
			list, err := hosts.List(cmd.Context(), c)
			if err != nil {
				return err
			}
			return printHosts(cmd.OutOrStdout(), list, time.Now())
		},
	}
	flags.bind(cmd, false)
	return cmd
}

// answersWithin is how recent an agent's renewal must be for its host to count as answering:
// three renewals (hosts.RenewEvery).
const answersWithin = 3 * hosts.RenewEvery

func printHosts(out io.Writer, list []hosts.Host, now time.Time) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tNAMESPACES\tADDRESS\tANSWERS\tRENEWED\tENGINE")
	for _, h := range list {
		answers, renewed := "no agent yet", "-"
		if h.Renewed != nil {
			renewed = duration.HumanDuration(now.Sub(*h.Renewed)) + " ago"
			answers = map[bool]string{true: "yes", false: "no"}[now.Sub(*h.Renewed) <= answersWithin]
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", h.Name, strings.Join(h.Namespaces, ","), h.Address, answers, renewed, termtext.Escape(orDash(h.Engine)))
	}
	return tw.Flush()
}

func newHostRemoveCommand() *cobra.Command {
	var flags clusterFlags
	var abandon bool
	cmd := &cobra.Command{
		Use:   "remove NAME",
		Short: "Unregister a Docker host: its token revoked, its rights and Lease deleted",
		Long: `Refused while the host runs plans (they hold its finalizer docker.score.dev/NAME, and
their deletion would wait for an agent that can no longer answer): delete their Workloads
first. --abandon removes it anyway and lets go of those plans: their containers are left on the
host, no longer managed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := flags.connect()
			if err != nil {
				return err
			}
			if err := hosts.Remove(cmd.Context(), c, args[0], abandon); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "host %s removed; its token is revoked\n", args[0])
			return nil
		},
	}
	flags.bind(cmd, false)
	cmd.Flags().BoolVar(&abandon, "abandon", false, "remove it while it runs plans, leaving their containers unmanaged")
	return cmd
}
