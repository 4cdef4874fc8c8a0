package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/devenv"
	"github.com/score-orchestrator/score-orchestrator/internal/termtext"
)

// errNotReady is a wait that ended before every Workload was Ready.
var errNotReady = errors.New("not every workload became ready")

// permanent are the Ready reasons waiting does not change: the Workload, the config or the
// platform must change first (workload-lifecycle.md's permanent errors).
var permanent = map[scorev1b1.Reason]bool{
	scorev1b1.ReasonSpecInvalid:     true,
	scorev1b1.ReasonPolicyViolation: true,
	scorev1b1.ReasonClaimFailed:     true,
}

func newApplyCommand() *cobra.Command {
	var (
		flags  clusterFlags
		files  []string
		image  string
		noWait bool
	)
	cmd := &cobra.Command{
		Use:   "apply -f score.yaml [-f other.yaml | -f DIR ...]",
		Short: "Convert Score files, apply them, and wait until every Workload is Ready",
		Long: `Convert Score files to Workloads, apply them server-side, and wait until every one is Ready,
printing each Workload's state as it changes. Several files (repeat -f) or a directory (every
*.yaml and *.yml file below it) apply as one app.

The wait stops at once when a Workload fails for a cause waiting does not change (SpecInvalid,
PolicyViolation, ClaimFailed): the command prints the cause — a dependency's own message when
your rights let it read the dependency — and exits 1. It ends with a table of every Workload's
state. Without a terminal it prints plain lines only.`,
		Example: `  scorectl apply -f score.yaml -n team-a
  scorectl apply -f apps/ -n shop --timeout 10m
  scorectl apply -f score.yaml --image registry.example.com/web:1.4.2`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(files) == 0 {
				return errors.New("-f is required")
			}
			c, ns, err := flags.connect()
			if err != nil {
				return err
			}
			workloads, err := readWorkloads(files, ns, image)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			keys, err := applyWorkloads(cmd.Context(), c, workloads, out)
			if err != nil {
				return err
			}
			if noWait {
				return nil
			}
			w := &waiter{c: c, out: out, tty: devenv.Terminal(cmd.ErrOrStderr()), progress: cmd.ErrOrStderr()}
			return w.wait(cmd.Context(), keys, flags.timeout)
		},
	}
	flags.bind(cmd, true)
	cmd.Flags().StringArrayVarP(&files, "file", "f", nil, "a Score file, or a directory of them; repeat for several")
	cmd.Flags().StringVar(&image, "image", "", `the image of every container whose image is "." (score-k8s's --image)`)
	cmd.Flags().BoolVar(&noWait, "no-wait", false, "apply and return without waiting")
	return cmd
}

// applyWorkloads applies the Workloads server-side, as scorectl, and returns their keys.
func applyWorkloads(ctx context.Context, c client.Client, workloads []*scorev1b1.Workload, out io.Writer) ([]client.ObjectKey, error) {
	keys := make([]client.ObjectKey, 0, len(workloads))
	for _, w := range workloads {
		u := &unstructured.Unstructured{Object: withoutStatus(w)}
		if err := c.Patch(ctx, u, client.Apply, client.FieldOwner("scorectl"), client.ForceOwnership); err != nil {
			return nil, fmt.Errorf("applying %s: %w", w.Name, err)
		}
		fmt.Fprintf(out, "workload.score.dev/%s applied\n", w.Name)
		keys = append(keys, client.ObjectKeyFromObject(w))
	}
	return keys, nil
}

// waiter follows Workloads until each is Ready or failed for good.
type waiter struct {
	c   client.Client
	out io.Writer
	// progress gets the state changes; on a terminal (tty) also a redrawn status line.
	progress io.Writer
	tty      bool
}

// state is what a Workload says now.
type state struct {
	key      client.ObjectKey
	ready    bool
	reason   scorev1b1.Reason
	message  string
	endpoint string
	// current is true when the status is for the Workload's generation.
	current bool
}

func (s state) failed() bool { return s.current && !s.ready && permanent[s.reason] }

// wait reads the Workloads until each is Ready, one fails for good, or timeout passes, then
// prints the table and returns the error that ended the wait (nil when all are Ready).
func (w *waiter) wait(ctx context.Context, keys []client.ObjectKey, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	last := map[client.ObjectKey]string{}
	var states []state
	status := ""
	for i := 0; ; i++ {
		states = states[:0]
		ready := 0
		var failed *state
		for _, key := range keys {
			s, err := w.read(ctx, key)
			if err != nil {
				return err
			}
			states = append(states, s)
			if line := s.line(); line != last[key] {
				w.clearStatus(status)
				fmt.Fprintln(w.progress, line)
				last[key], status = line, ""
			}
			if s.ready {
				ready++
			}
			if s.failed() && failed == nil {
				failed = &states[len(states)-1]
			}
		}
		var end error
		switch {
		case ready == len(keys):
		case failed != nil:
			end = fmt.Errorf("%s: %s: %s%s", failed.key.Name, failed.reason, failed.message, w.cause(ctx, failed.key))
		case time.Now().After(deadline):
			end = fmt.Errorf("%w within %s (%d of %d)", errNotReady, timeout, ready, len(keys))
		default:
			if w.tty {
				w.clearStatus(status)
				status = fmt.Sprintf("%s %d of %d Ready", spinner[i%len(spinner)], ready, len(keys))
				fmt.Fprint(w.progress, status)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(500 * time.Millisecond):
			}
			continue
		}
		w.clearStatus(status)
		printStates(w.out, states)
		return end
	}
}

var spinner = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

func (w *waiter) clearStatus(status string) {
	if w.tty && status != "" {
		fmt.Fprintf(w.progress, "\r%s\r", strings.Repeat(" ", len([]rune(status))))
	}
}

// read is a Workload's state as its status says it.
func (w *waiter) read(ctx context.Context, key client.ObjectKey) (state, error) {
	wl := &scorev1b1.Workload{}
	if err := w.c.Get(ctx, key, wl); err != nil {
		return state{}, err
	}
	return stateOf(key, wl), nil
}

// stateOf is what a Workload's status says, its words escaped for the terminal.
func stateOf(key client.ObjectKey, wl *scorev1b1.Workload) state {
	s := state{key: key, reason: "Pending", message: "Waiting for the orchestrator."}
	if wl.Status.Endpoint != nil {
		s.endpoint = termtext.Escape(*wl.Status.Endpoint)
	}
	if r := meta.FindStatusCondition(wl.Status.Conditions, scorev1b1.ConditionReady); r != nil {
		s.current = r.ObservedGeneration == wl.Generation
		s.ready = s.current && r.Status == metav1.ConditionTrue
		s.reason, s.message = scorev1b1.Reason(termtext.Escape(r.Reason)), termtext.Escape(r.Message)
	}
	return s
}

// line is a progress line: the Workload's own reason and message.
func (s state) line() string {
	return fmt.Sprintf("%s: %s — %s", s.key.Name, s.reason, s.message)
}

// cause is what a failed Workload's dependencies say, as scorectl why shows it: the message
// of each failed claim, or, when the user's rights do not reach claims, where to look.
func (w *waiter) cause(ctx context.Context, key client.ObjectKey) string {
	var claims scorev1b1.ResourceClaimList
	err := w.c.List(ctx, &claims, client.InNamespace(key.Namespace), client.MatchingLabels{scorev1b1.LabelWorkload: key.Name})
	switch {
	case apierrors.IsForbidden(err):
		return "\n  (your rights do not show the dependencies' own messages; a platform engineer sees them with scorectl why " + key.Name + ")"
	case err != nil:
		return ""
	}
	var out strings.Builder
	for _, c := range claims.Items {
		if c.Status.Phase == scorev1b1.ClaimPhaseFailed && c.Status.Message != "" {
			fmt.Fprintf(&out, "\n  resource %s (%s): %s", c.Spec.Key, c.Spec.Type, termtext.Escape(c.Status.Message))
		}
	}
	return out.String()
}

// printStates is the closing table: every Workload's readiness, reason and endpoint.
func printStates(out io.Writer, states []state) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKLOAD\tREADY\tREASON\tENDPOINT")
	for _, s := range states {
		ready := "False"
		if s.ready {
			ready = "True"
		}
		endpoint := s.endpoint
		if endpoint == "" {
			endpoint = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.key.Name, ready, s.reason, endpoint)
	}
	_ = tw.Flush()
}
