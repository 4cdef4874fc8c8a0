package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scoreorchestrator "github.com/score-orchestrator/score-orchestrator"
	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/clusters"
	"github.com/score-orchestrator/score-orchestrator/internal/fleet/registration"
	"github.com/score-orchestrator/score-orchestrator/internal/termtext"
)

func newClusterCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Register, list and remove the member clusters Workloads are placed on",
		Long: `A member cluster is a Secret in the control plane's namespace labelled
score.dev/secret-type=cluster: its name is the cluster's, its other labels are the cluster's
labels (which backends' placement selects on), and its data is the connection. The hub, the
cluster the controllers run in, is where Workloads run when their backend has no placement.`,
	}
	cmd.AddCommand(newClusterAddCommand(), newClusterListCommand(), newClusterRemoveCommand())
	return cmd
}

func newClusterAddCommand() *cobra.Command {
	var member, hub clusterFlags
	var labels []string
	var server, namespace string
	cmd := &cobra.Command{
		Use:   "add NAME --kubeconfig MEMBER_KUBECONFIG [--context C] --label k=v ...",
		Short: "Register a member cluster: create the controllers' least-privilege identity there, its token on the hub",
		Long: `Creates, on the member (--kubeconfig, --context; Kubernetes 1.30 or later), the
controllers' identity confined to the namespaces the hub places into: the namespace
score-system, the ServiceAccount score-runtime, the ClusterRole score-runtime-member (get and
create namespaces, create RoleBindings, bind score-runtime-member-namespace) bound to it, the
ClusterRole score-runtime-member-namespace (the runtime's and the provisioner's rules for the
objects they apply, bound in each namespace when the hub first places into it), the admission
policy score-runtime-member (namespaces only created labelled score.dev/placed=true, rights
only granted in such namespaces) and a token valid for a year, bound to a Secret
score-runtime-token-* there. Then it writes the registration Secret NAME on the hub
(--hub-kubeconfig, --hub-context) with the member's server, CA and that token, labelled with
--label. A Secret NAME that is not a registration is refused, never overwritten.

Run it again to rotate the token (the previous one is revoked once the new one is on the hub)
or change the labels: the controllers pick the new Secret up without a restart.`,
		Example: `  scorectl cluster add eu-1 --kubeconfig eu-1.kubeconfig --label region=eu --label tier=gold`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
				return fmt.Errorf("cluster name %q: %s", name, errs[0])
			}
			clusterLabels, err := parseLabels(labels)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), member.timeout)
			defer cancel()
			mcfg, _, err := member.restConfig()
			if err != nil {
				return fmt.Errorf("the member: %w", err)
			}
			hc, _, err := hub.connect()
			if err != nil {
				return fmt.Errorf("the hub: %w", err)
			}
			roles, err := registration.HubRoles(scoreorchestrator.Bundle)
			if err != nil {
				return err
			}
			op, err := registration.Register(ctx, mcfg, hc, registration.Registration{Name: name, Namespace: namespace, Server: server, Labels: clusterLabels, Roles: roles})
			if err != nil {
				return err
			}
			if server == "" {
				server = mcfg.Host
			}
			fmt.Fprintf(cmd.OutOrStdout(), "cluster %s %s (%s); `scorectl cluster list` shows whether the runtime reaches it\n", name, op, server)
			return nil
		},
	}
	cmd.Flags().StringVar(&member.kubeconfig, "kubeconfig", "", "the member cluster's kubeconfig (an identity that may create RBAC there)")
	cmd.Flags().StringVar(&member.context, "context", "", "the member kubeconfig's context")
	cmd.Flags().DurationVar(&member.timeout, "timeout", time.Minute, "how long to wait for the member's token")
	cmd.Flags().StringVar(&hub.kubeconfig, "hub-kubeconfig", "", "the hub's kubeconfig (default: $KUBECONFIG or ~/.kube/config)")
	cmd.Flags().StringVar(&hub.context, "hub-context", "", "the hub kubeconfig's context")
	cmd.Flags().StringArrayVar(&labels, "label", nil, "a cluster label, k=v (repeatable)")
	cmd.Flags().StringVar(&server, "server", "", "the member's API server URL as the hub's controllers reach it (default: the kubeconfig's)")
	cmd.Flags().StringVar(&namespace, "control-plane-namespace", "score-system", "the hub namespace the controllers run in")
	_ = cmd.MarkFlagRequired("kubeconfig")
	return cmd
}

func newClusterListCommand() *cobra.Command {
	var flags clusterFlags
	var namespace string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the member clusters: labels, whether the runtime reaches them, version, Workloads placed",
		Long: `Reachability and version are what the runtime sees (the ConfigMap score-clusters it
publishes), not what this machine can reach.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			c, _, err := flags.connect()
			if err != nil {
				return err
			}
			var secrets metav1.PartialObjectMetadataList
			secrets.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
			if err := c.List(ctx, &secrets, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: clusters.Selector}); err != nil {
				return fmt.Errorf("listing the registrations: %w", err)
			}
			cm := &corev1.ConfigMap{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: clusters.StatusConfigMap}, cm); client.IgnoreNotFound(err) != nil {
				return err
			}
			status := clusters.Decode(cm)
			placed, err := placedCounts(ctx, c)
			if err != nil {
				return err
			}
			return printClusters(cmd.OutOrStdout(), secrets.Items, status, placed)
		},
	}
	flags.bind(cmd, false)
	cmd.Flags().StringVar(&namespace, "control-plane-namespace", "score-system", "the hub namespace the controllers run in")
	return cmd
}

// printClusters is the table of cluster list: the hub, then each registration with its labels,
// whether the runtime reaches it, since when, its version, the Workloads placed there and why
// it is refused. The version and the message are what a member's API server answered.
func printClusters(out io.Writer, registrations []metav1.PartialObjectMetadata, status map[string]clusters.Status, placed map[string]int) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tLABELS\tREACHABLE\tSINCE\tVERSION\tWORKLOADS\tMESSAGE")
	fmt.Fprintf(tw, "(hub)\t-\tyes\t-\t-\t%d\t\n", placed[""])
	for _, s := range registrations {
		st, known := status[s.Name]
		reachable, since := "unknown", "-"
		if known {
			reachable = map[bool]string{true: "yes", false: "no"}[st.Reachable]
		}
		if st.Since != nil {
			// For how long it has (not) answered: what placement.failover counts.
			since = duration.HumanDuration(time.Since(st.Since.Time))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", s.Name, labelList(clusters.Labels(&s)), reachable, since, termtext.Escape(orDash(st.Version)), placed[s.Name], termtext.Escape(st.Message))
	}
	return tw.Flush()
}

func newClusterRemoveCommand() *cobra.Command {
	var flags, member clusterFlags
	var namespace string
	var abandon bool
	cmd := &cobra.Command{
		Use:   "remove NAME",
		Short: "Unregister a member cluster; refused while Workloads are placed there unless --abandon",
		Long: `While Workloads run on the cluster, removing it is refused: change the placement (the
backend's cluster selector, or the cluster's labels with kubectl label secret) so they move
first. --abandon removes it anyway: the runtime lets go of everything it applied there (left
running, no longer managed) and the Workloads are placed again where their selector allows.
This is the way to let go of a cluster that will never answer again.

Before the registration is deleted its token is revoked on the member: the Secret the token
is bound to is deleted there, with the token itself (its identity may delete that one Secret),
or with --member-kubeconfig (the member's administrator) when this machine cannot reach the
member as the controllers do. A token that cannot be revoked keeps the registration, unless
--abandon, which removes it anyway and says how to revoke the token on the member.`,
		Example: `  scorectl cluster remove eu-1
  scorectl cluster remove eu-1 --member-kubeconfig eu-1.kubeconfig
  scorectl cluster remove eu-1 --abandon   # a cluster that is gone for good`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, _, err := flags.connect()
			if err != nil {
				return err
			}
			placed, err := placedCounts(ctx, c)
			if err != nil {
				return err
			}
			if n := placed[args[0]]; n > 0 && !abandon {
				return fmt.Errorf("%d workloads run on cluster %s: move them first (placement or the cluster's labels), or pass --abandon to let go of their objects there", n, args[0])
			}
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: args[0]}}
			if err := c.Get(ctx, client.ObjectKeyFromObject(s), s); err != nil {
				return err
			}
			if s.Labels[scorev1b1.LabelSecretType] != scorev1b1.SecretTypeCluster {
				return fmt.Errorf("secret %s/%s is not a cluster registration", namespace, args[0])
			}
			revokeErr := revokeToken(ctx, s, member)
			switch err := revokeErr; {
			case errors.Is(err, registration.ErrNotRevocable):
				// Written by hand or by an older scorectl: nothing here can revoke it.
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: the token of cluster %s is not revoked: %s; on the member, %s\n", args[0], termtext.Escape(err.Error()), revokeByHand(s))
			case err != nil && !abandon:
				return fmt.Errorf("cluster %s is kept: its token could not be revoked on the member (%w); pass --member-kubeconfig to revoke it as the member's administrator, or --abandon to remove the registration anyway", args[0], err)
			case err != nil:
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: the token of cluster %s is not revoked (%s): on the member, %s\n", args[0], termtext.Escape(err.Error()), revokeByHand(s))
			}
			if err := c.Delete(ctx, s, client.Preconditions{UID: &s.UID}); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "cluster %s removed%s\n", args[0], map[bool]string{true: ", its token revoked"}[revokeErr == nil])
			return nil
		},
	}
	flags.bind(cmd, false)
	cmd.Flags().StringVar(&namespace, "control-plane-namespace", "score-system", "the hub namespace the controllers run in")
	cmd.Flags().BoolVar(&abandon, "abandon", false, "remove even though Workloads run there (their objects there are let go of), or its token cannot be revoked")
	cmd.Flags().StringVar(&member.kubeconfig, "member-kubeconfig", "", "revoke the token as the member's administrator (default: as the token itself, at the registration's server)")
	cmd.Flags().StringVar(&member.context, "member-context", "", "the member kubeconfig's context")
	return cmd
}

// revokeToken revokes a registration's token on its member (see registration.Revoke), as
// member's kubeconfig when one is given.
func revokeToken(ctx context.Context, reg *corev1.Secret, member clusterFlags) error {
	var cfg *rest.Config
	if member.kubeconfig != "" {
		var err error
		if cfg, _, err = member.restConfig(); err != nil {
			return fmt.Errorf("the member: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	return registration.Revoke(ctx, reg, cfg)
}

// revokeByHand says how to revoke a registration's token on the member.
func revokeByHand(reg *corev1.Secret) string {
	if name := reg.Annotations[registration.AnnotationTokenSecret]; name != "" {
		return fmt.Sprintf("kubectl -n %s delete secret %s", registration.MemberNamespace, name)
	}
	return fmt.Sprintf("delete the token's Secret, or the ServiceAccount %s/%s (which revokes all its tokens)", registration.MemberNamespace, registration.MemberServiceAccount)
}

// placedCounts counts the plans placed on each cluster, or holding objects there ("" the hub).
func placedCounts(ctx context.Context, c client.Client) (map[string]int, error) {
	var plans scorev1b1.WorkloadPlanList
	if err := c.List(ctx, &plans); err != nil {
		return nil, fmt.Errorf("listing the plans: %w", err)
	}
	out := map[string]int{}
	for i := range plans.Items {
		for _, cl := range clusters.OfPlan(&plans.Items[i]) {
			out[cl]++
		}
	}
	return out, nil
}

func parseLabels(in []string) (map[string]string, error) {
	out := map[string]string{}
	for _, l := range in {
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			return nil, fmt.Errorf("label %q: use key=value", l)
		}
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return nil, fmt.Errorf("label key %q: %s", k, errs[0])
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return nil, fmt.Errorf("label value %q: %s", v, errs[0])
		}
		if k == scorev1b1.LabelSecretType {
			return nil, errors.New("the label " + k + " is the registration's own")
		}
		out[k] = v
	}
	return out, nil
}

func labelList(l map[string]string) string {
	if len(l) == 0 {
		return "-"
	}
	parts := make([]string, 0, len(l))
	for k, v := range l {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return termtext.Escape(strings.Join(parts, ","))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
