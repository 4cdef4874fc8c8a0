package devenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// ErrNotReady is a wait that ended before every Workload was Ready.
var ErrNotReady = errors.New("not every Workload became Ready")

// WaitReady waits until every Workload in ns is Ready for its current generation, writing its
// progress as it goes: one line redrawn each second on a terminal, else a line each time the
// Workloads' states change (a log holds no carriage returns). On timeout the error names what
// blocks each Workload.
func WaitReady(ctx context.Context, c client.Client, ns string, timeout time.Duration, progress io.Writer) error {
	start := time.Now()
	tty, last := Terminal(progress), ""
	for {
		var list scorev1b1.WorkloadList
		if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return err
		}
		ready, states, blockers := 0, make([]string, 0, len(list.Items)), []string{}
		for i := range list.Items {
			w := &list.Items[i]
			reason, ok := readiness(w)
			if ok {
				ready++
			} else {
				blockers = append(blockers, w.Name+": "+reason)
			}
			states = append(states, w.Name+"="+strings.SplitN(reason, ":", 2)[0])
		}
		line := fmt.Sprintf("%d/%d Ready  %s", ready, len(list.Items), strings.Join(states, " "))
		switch {
		case tty:
			fmt.Fprintf(progress, "\r[dev] %3ds  %s ", int(time.Since(start).Seconds()), line)
		case line != last:
			fmt.Fprintf(progress, "[dev] %3ds  %s\n", int(time.Since(start).Seconds()), line)
		}
		last = line
		done := len(list.Items) > 0 && ready == len(list.Items)
		if done || time.Since(start) > timeout {
			if tty {
				fmt.Fprintln(progress)
			}
			if done {
				return nil
			}
			return fmt.Errorf("%w in %s within %s: %s", ErrNotReady, ns, timeout, strings.Join(blockers, "; "))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// readiness returns the Ready reason (with its message when not Ready) and whether the
// Workload is Ready for its current generation.
func readiness(w *scorev1b1.Workload) (string, bool) {
	c := meta.FindStatusCondition(w.Status.Conditions, scorev1b1.ConditionReady)
	switch {
	case c == nil:
		return "Pending: no status yet", false
	case c.Status == metav1.ConditionTrue && c.ObservedGeneration == w.Generation:
		return c.Reason, true
	default:
		return c.Reason + ": " + c.Message, false
	}
}

// Terminal reports whether w is a terminal, where a status line may be redrawn.
func Terminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
