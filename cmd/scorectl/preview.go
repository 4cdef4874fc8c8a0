package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/devenv"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/preview"
	"github.com/score-orchestrator/score-orchestrator/internal/termtext"
)

func newPreviewCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "preview",
		Short: "Preview environments: an app in a namespace of its own, deleted when it expires",
		Long: `A preview environment is an app's Workloads in a namespace of their own (preview-NAME,
labelled score.dev/preview=NAME), with dependencies of their own that are deleted with it
(the claims' policy is Delete, whatever the config's default, unless the platform's
previews.deprovisionPolicy says otherwise). The control plane deletes a preview when it
expires (--ttl; the platform's previews.defaultTTL when none is given, at most its
previews.maxTTL after creation), and refuses previews over the platform's limit
(previews.max per maker). A preview records its maker (you, as the API server names you);
only its maker or a platform administrator may change or end it. Creating one needs the right
to create namespaces.`,
	}
	cmd.AddCommand(newPreviewUpCommand(), newPreviewListCommand(), newPreviewDownCommand())
	return cmd
}

func newPreviewUpCommand() *cobra.Command {
	var (
		flags  clusterFlags
		files  []string
		image  string
		ttl    time.Duration
		noWait bool
	)
	cmd := &cobra.Command{
		Use:   "up NAME -f score.yaml [-f other.yaml | -f DIR ...] [--ttl 24h]",
		Short: "Create or update a preview environment and wait until every Workload is Ready",
		Long: `Create namespace preview-NAME (labelled as a preview of the namespace -n names, with that
namespace's own labels: its Pod Security level and allowed profiles restrict the preview too;
annotated with you as its maker), apply the Score files' Workloads into it and wait until each
is Ready, as scorectl apply does. Running it again updates the Workloads and, with --ttl, sets
a new expiry.`,
		Example: `  scorectl preview up pr-42 -f score.yaml -n team-a --ttl 4h
  scorectl preview up pr-42 -f apps/ --image registry.example.com/web:pr-42`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if len(files) == 0 {
				return errors.New("-f is required")
			}
			if errs := validation.IsDNS1123Label(scorev1b1.PreviewNamespacePrefix + name); len(errs) > 0 {
				return fmt.Errorf("preview name %q: %s (it names namespace %s%s)", name, strings.Join(errs, "; "), scorev1b1.PreviewNamespacePrefix, name)
			}
			if ttl < 0 {
				return errors.New("--ttl must be positive")
			}
			c, of, err := flags.connect()
			if err != nil {
				return err
			}
			start := time.Now()
			ctx, out := cmd.Context(), cmd.OutOrStdout()
			ns, err := ensurePreviewNamespace(ctx, c, name, of, ttl)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "namespace/%s is preview %s of namespace %s\n", ns, name, of)
			workloads, err := readWorkloads(files, ns, image)
			if err != nil {
				return err
			}
			keys, err := applyWorkloads(ctx, c, workloads, out)
			if err != nil || noWait {
				return err
			}
			w := &waiter{c: c, out: out, tty: devenv.Terminal(cmd.ErrOrStderr()), progress: cmd.ErrOrStderr()}
			if err := w.wait(ctx, keys, flags.timeout); err != nil {
				return err
			}
			fmt.Fprintf(out, "preview %s is up in %s (namespace %s); scorectl preview down %s deletes it\n", name, time.Since(start).Round(100*time.Millisecond), ns, name)
			return nil
		},
	}
	flags.bind(cmd, true)
	cmd.Flags().StringArrayVarP(&files, "file", "f", nil, "a Score file, or a directory of them; repeat for several")
	cmd.Flags().StringVar(&image, "image", "", `the image of every container whose image is "." (score-k8s's --image)`)
	cmd.Flags().DurationVar(&ttl, "ttl", 0, "how long the preview lives from now (default: the platform's previews.defaultTTL, 24h unless set)")
	cmd.Flags().BoolVar(&noWait, "no-wait", false, "apply and return without waiting")
	return cmd
}

// ensurePreviewNamespace creates or updates the preview's namespace, applied server-side: the
// preview labels, its maker (the user the API server knows this client as), the labels of the
// namespace it previews (its platform restrictions: Pod Security's, score.dev/allowed-profiles,
// a team label), and the expiry when ttl is set. A namespace of that name that is not this
// preview, or is another maker's, is refused, and so is a namespace to preview whose labels
// cannot be read: a preview without them could escape its restrictions.
func ensurePreviewNamespace(ctx context.Context, c client.Client, name, of string, ttl time.Duration) (string, error) {
	nsName := scorev1b1.PreviewNamespacePrefix + name
	maker, err := whoAmI(ctx, c)
	if err != nil {
		return "", err
	}
	existing := &corev1.Namespace{}
	switch err := c.Get(ctx, client.ObjectKey{Name: nsName}, existing); {
	case err == nil && existing.Labels[scorev1b1.LabelPreview] != name:
		return "", fmt.Errorf("namespace %s exists and is not preview %s: choose another name", nsName, name)
	case err == nil && !existing.DeletionTimestamp.IsZero():
		return "", fmt.Errorf("preview %s is being deleted: wait until scorectl preview list no longer shows it", name)
	case err == nil && existing.Annotations[scorev1b1.AnnotationPreviewMaker] != maker:
		return "", fmt.Errorf("preview %s was made by %q, not by you (%s): only its maker or a platform administrator may change it; choose another name",
			name, existing.Annotations[scorev1b1.AnnotationPreviewMaker], maker)
	case err != nil && !apierrors.IsNotFound(err):
		return "", fmt.Errorf("reading namespace %s: %w", nsName, err)
	}
	source := &corev1.Namespace{}
	switch err := c.Get(ctx, client.ObjectKey{Name: of}, source); {
	case apierrors.IsNotFound(err):
		return "", fmt.Errorf("namespace %s, which the preview is of, does not exist: name it with -n", of)
	case err != nil:
		return "", fmt.Errorf("reading namespace %s, whose labels (Pod Security's, score.dev/allowed-profiles) the preview keeps: %w", of, err)
	}
	labels := carriedLabels(source.Labels)
	maps.Copy(labels, map[string]string{scorev1b1.LabelPreview: name, scorev1b1.LabelPreviewOf: of})
	ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: nsName, Labels: labels, Annotations: map[string]string{scorev1b1.AnnotationPreviewMaker: maker}}}
	// Without --ttl the expiry stays as it is (an apply that left it out would remove it).
	expires := existing.Annotations[scorev1b1.AnnotationPreviewExpires]
	if ttl > 0 {
		expires = time.Now().Add(ttl).UTC().Format(time.RFC3339)
	}
	if expires != "" {
		ns.Annotations[scorev1b1.AnnotationPreviewExpires] = expires
	}
	if err := c.Patch(ctx, ns, client.Apply, client.FieldOwner("scorectl-preview"), client.ForceOwnership); err != nil {
		return "", fmt.Errorf("creating namespace %s: %w", nsName, err)
	}
	return nsName, nil
}

// carriedLabels are the labels a preview keeps of the namespace it previews: all but its name
// and the control plane's own (score.dev/), except score.dev/allowed-profiles, the platform's
// restriction of the profiles its Workloads may name. Pod Security's labels are among them.
func carriedLabels(of map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range of {
		if k == labelAllowedProfiles || !strings.HasPrefix(k, "score.dev/") && k != corev1.LabelMetadataName {
			out[k] = v
		}
	}
	return out
}

// labelAllowedProfiles is the namespace label the chart's score-allowed-profiles admission
// policy reads (config/admission/allowed-profiles.yaml).
const labelAllowedProfiles = "score.dev/allowed-profiles"

// whoAmI is the user name the API server knows this client by (a SelfSubjectReview): the
// name the admission policy score-preview-makers holds a preview's maker annotation to.
func whoAmI(ctx context.Context, c client.Client) (string, error) {
	review := &authenticationv1.SelfSubjectReview{}
	if err := c.Create(ctx, review); err != nil {
		return "", fmt.Errorf("asking the API server who you are (a SelfSubjectReview, to record you as the preview's maker): %w", err)
	}
	if review.Status.UserInfo.Username == "" {
		return "", errors.New("the API server did not say who you are (a SelfSubjectReview answered without a user name): a preview records its maker")
	}
	return review.Status.UserInfo.Username, nil
}

func newPreviewListCommand() *cobra.Command {
	var (
		flags clusterFlags
		of    string
	)
	cmd := &cobra.Command{
		Use:   "list [--of NAMESPACE]",
		Short: "List the preview environments with their age, expiry and state",
		Long: `List every preview environment (or those of one namespace, with --of): its namespace, the
namespace it previews, its maker, its age, when the control plane deletes it, its Workloads Ready and
its state — Ready, Progressing, Refused (the platform's limit or policy: the message says
which), Expired (being deleted by the control plane) or Deleting.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, _, err := flags.connect()
			if err != nil {
				return err
			}
			var list corev1.NamespaceList
			sel := client.MatchingLabels{}
			if of != "" {
				sel[scorev1b1.LabelPreviewOf] = of
			}
			if err := c.List(cmd.Context(), &list, client.HasLabels{scorev1b1.LabelPreview}, sel); err != nil {
				return fmt.Errorf("listing the preview namespaces: %w", err)
			}
			rows := make([]previewRow, 0, len(list.Items))
			for i := range list.Items {
				row, ok, err := readPreview(cmd.Context(), c, &list.Items[i])
				if err != nil {
					return err
				}
				if ok {
					rows = append(rows, row)
				}
			}
			printPreviews(cmd.OutOrStdout(), rows, time.Now())
			return nil
		},
	}
	flags.bind(cmd, false)
	cmd.Flags().StringVar(&of, "of", "", "only the previews of this namespace")
	return cmd
}

// previewRow is one preview as scorectl preview list shows it.
type previewRow struct {
	preview.Preview
	created        time.Time
	ready, total   int
	state, refusal string
	// expires is the expiry the control plane set (its annotation); zero until it did.
	expires time.Time
}

// readPreview reads a preview namespace and its Workloads' Ready conditions.
func readPreview(ctx context.Context, c client.Client, ns *corev1.Namespace) (previewRow, bool, error) {
	p, ok := preview.Read(preview.Namespace{Name: ns.Name, Labels: ns.Labels, Annotations: ns.Annotations, Created: ns.CreationTimestamp.Time}, orchconfig.Previews{})
	if !ok {
		return previewRow{}, false, nil
	}
	row := previewRow{Preview: p, created: ns.CreationTimestamp.Time}
	if at, err := time.Parse(time.RFC3339, ns.Annotations[scorev1b1.AnnotationPreviewExpires]); err == nil {
		row.expires = at
	}
	var workloads scorev1b1.WorkloadList
	if err := c.List(ctx, &workloads, client.InNamespace(ns.Name)); err != nil {
		return row, false, fmt.Errorf("listing the Workloads of preview %s: %w", p.Name, err)
	}
	row.total = len(workloads.Items)
	for _, w := range workloads.Items {
		r := meta.FindStatusCondition(w.Status.Conditions, scorev1b1.ConditionReady)
		switch {
		case r == nil:
		case r.Status == metav1.ConditionTrue && r.ObservedGeneration == w.Generation:
			row.ready++
		case r.Reason == string(scorev1b1.ReasonPolicyViolation):
			row.refusal = r.Message
		}
	}
	switch {
	case !ns.DeletionTimestamp.IsZero():
		row.state = "Deleting"
	case !row.expires.IsZero() && !time.Now().Before(row.expires):
		row.state = "Expired"
	case row.refusal != "":
		row.state = "Refused"
	case row.total > 0 && row.ready == row.total:
		row.state = "Ready"
	default:
		row.state = "Progressing"
	}
	return row, true, nil
}

func printPreviews(out io.Writer, rows []previewRow, now time.Time) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tNAMESPACE\tOF\tMAKER\tAGE\tEXPIRES IN\tREADY\tSTATE")
	for _, r := range rows {
		expires := "-" // the control plane has not set it yet
		if !r.expires.IsZero() {
			expires = duration.HumanDuration(max(r.expires.Sub(now), 0))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d/%d\t%s\n", r.Name, r.Namespace, r.Of, termtext.Escape(orDash(r.Maker)), duration.HumanDuration(now.Sub(r.created)), expires, r.ready, r.total, r.state)
	}
	_ = tw.Flush()
	for _, r := range rows {
		if r.refusal != "" {
			fmt.Fprintf(out, "%s: %s\n", r.Name, termtext.Escape(r.refusal))
		}
	}
}

func newPreviewDownCommand() *cobra.Command {
	var (
		flags  clusterFlags
		noWait bool
	)
	cmd := &cobra.Command{
		Use:   "down NAME",
		Short: "Delete a preview environment with its dependencies",
		Long: `Expire the preview now: the control plane deletes its Workloads, each releasing its
dependencies per the preview's policy (Delete unless the platform says otherwise), then its
namespace. The command waits until the namespace is gone, showing what is left.`,
		Example: `  scorectl preview down pr-42`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			c, _, err := flags.connect()
			if err != nil {
				return err
			}
			ctx, out := cmd.Context(), cmd.OutOrStdout()
			nsName := scorev1b1.PreviewNamespacePrefix + name
			ns := &corev1.Namespace{}
			if err := c.Get(ctx, client.ObjectKey{Name: nsName}, ns); err != nil {
				if apierrors.IsNotFound(err) {
					return fmt.Errorf("there is no preview %s (no namespace %s)", name, nsName)
				}
				return err
			}
			if ns.Labels[scorev1b1.LabelPreview] != name {
				return fmt.Errorf("namespace %s is not preview %s", nsName, name)
			}
			start := time.Now()
			patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, scorev1b1.AnnotationPreviewExpires, start.UTC().Format(time.RFC3339))
			if err := c.Patch(ctx, ns, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
				return fmt.Errorf("expiring preview %s: %w", name, err)
			}
			fmt.Fprintf(out, "preview %s expired: the control plane deletes its Workloads with their dependencies, then namespace %s\n", name, nsName)
			if noWait {
				return nil
			}
			return waitPreviewGone(ctx, c, name, nsName, flags.timeout, out, start)
		},
	}
	flags.bind(cmd, true)
	cmd.Flags().BoolVar(&noWait, "no-wait", false, "expire it and return without waiting")
	return cmd
}

// waitPreviewGone waits until the preview's namespace is gone, printing the Workloads left as
// their number changes.
func waitPreviewGone(ctx context.Context, c client.Client, name, nsName string, timeout time.Duration, out io.Writer, start time.Time) error {
	deadline := start.Add(timeout)
	last := ""
	for {
		ns := &corev1.Namespace{}
		err := c.Get(ctx, client.ObjectKey{Name: nsName}, ns)
		if apierrors.IsNotFound(err) {
			fmt.Fprintf(out, "preview %s is gone in %s\n", name, time.Since(start).Round(100*time.Millisecond))
			return nil
		}
		if err != nil {
			return err
		}
		var workloads scorev1b1.WorkloadList
		if err := c.List(ctx, &workloads, client.InNamespace(nsName)); err != nil {
			return err
		}
		line := fmt.Sprintf("  %d Workload(s) left", len(workloads.Items))
		if len(workloads.Items) == 0 {
			line = "  namespace " + nsName + " is being deleted"
		}
		if line != last {
			fmt.Fprintln(out, line)
			last = line
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("preview %s is still being deleted after %s: %s", name, timeout, strings.TrimSpace(last))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}
