package provisionerapi

import (
	"context"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/provisioners/provisioning"
)

// Client makes an http+api:// definition's requests for the provisioner: Step is its
// provisioning.Env.API, Call the one request (the delete request of a release).
type Client struct {
	// HTTP sends the requests (Send); nil is a plain client.
	HTTP *http.Client
	// Credential reads the credentials an api block names: a key of a Secret in the control
	// plane's namespace, never a claim's.
	Credential func(ctx context.Context, ref orchconfig.SecretKeyRef) (string, error)
	// Clock tells the time; nil is the real clock.
	Clock clock.PassiveClock
}

// Call renders one request, adds the credentials header, and sends it (Send).
func (c Client) Call(ctx context.Context, a *orchconfig.API, tpl orchconfig.APIRequest, method string, data provisioning.Data) (map[string]any, error) {
	req, err := Render(tpl, method, data)
	if err != nil {
		return nil, err
	}
	if cr := a.Credentials; cr != nil {
		v, err := c.Credential(ctx, cr.SecretRef)
		if err != nil {
			return nil, err
		}
		header := cr.Header
		if header == "" {
			header = "Authorization"
		}
		req.Headers[header] = cr.Prefix + v
	}
	return Send(ctx, c.HTTP, req)
}

// Step takes an instance one step: the create request when it is due (CreateDue), or one
// status request when the next poll is due, then its outputs once it is ready. It never
// waits: a pending instance's Progress says when to come back, the wait doubling per poll.
// The progress is kept in the instance's state with save, before and after a create request
// (so that the instance's other claims wait for its outcome) and after every step.
func (c Client) Step(ctx context.Context, def orchconfig.Provisioner, data provisioning.Data, save func(context.Context, provisioning.Result) error) (provisioning.Result, *provisioning.Progress, error) {
	progress, err := StateFrom(data.State)
	if err != nil {
		return provisioning.Result{}, &provisioning.Progress{Phase: provisioning.ProgressFailed, Message: err.Error()}, nil
	}
	now := c.now()
	next := progress
	switch {
	case progress.Phase == PhaseCreating || progress.Phase == PhaseSending:
		var waiting *provisioning.Progress
		if next, waiting, err = c.create(ctx, def, data, progress, now, save); err != nil || waiting != nil {
			return provisioning.Result{}, waiting, err
		}
	case progress.Phase == PhasePending && !now.Before(progress.Next):
		next = c.poll(ctx, def.API, data, progress, now)
	}
	if err := save(ctx, provisioning.Result{State: next.Map()}); err != nil {
		return provisioning.Result{}, nil, err
	}
	switch next.Phase {
	case PhasePending:
		return provisioning.Result{}, &provisioning.Progress{Phase: provisioning.ProgressPending, Message: next.Message, After: max(next.Next.Sub(now), time.Millisecond)}, nil
	case PhaseFailed:
		// Terminal for this instance: deleting the claim (under Delete) sends the delete
		// request, and the re-created claim starts afresh.
		return provisioning.Result{}, &provisioning.Progress{Phase: provisioning.ProgressFailed, Message: next.Message}, nil
	}
	data.State = next.Map()
	outputs, err := provisioning.RenderOutputs(def, data)
	if err != nil {
		return provisioning.Result{}, nil, err
	}
	return provisioning.Result{State: data.State, Outputs: outputs}, nil, nil
}

// create sends the create request, when it is due: the progress after it, or why the claim
// waits (another claim of the instance is sending it, or the last one failed and the next is
// not due).
func (c Client) create(ctx context.Context, def orchconfig.Provisioner, data provisioning.Data, progress State, now time.Time, save func(context.Context, provisioning.Result) error) (State, *provisioning.Progress, error) {
	a := def.API
	interval, _ := Settings(a)
	switch due, wait := CreateDue(progress, now); {
	case !due && progress.Phase == PhaseSending:
		// Another claim of the instance is sending the create request; its outcome, in the
		// state, is read on a later pass.
		return progress, &provisioning.Progress{Phase: provisioning.ProgressPending, Message: "another claim of the instance is creating it", After: min(wait, interval)}, nil
	case !due:
		// The last create request failed; it is sent again at the time the state keeps.
		return progress, &provisioning.Progress{Phase: provisioning.ProgressRetrying, Message: progress.Message, After: wait}, nil
	}
	// Recorded before sending, on top of the state as read: of the claims of the instance
	// that read it, this write succeeds for one, which sends the request (CreateDue).
	sending := State{Phase: PhaseSending, Since: now, Attempts: progress.Attempts}
	if err := save(ctx, provisioning.Result{State: sending.Map()}); err != nil {
		return progress, nil, err
	}
	body, err := c.Call(ctx, a, a.Create, "POST", data)
	if err != nil {
		// Nothing was created. The state says when to send it again (if that write fails, the
		// Sending state lapses after SendWindow); the instance's claims wait for it.
		failed := CreateFailed(sending, a, err.Error(), c.now())
		logr.FromContextOrDiscard(ctx).Info("The create request failed; it is sent again later", "provisioner", def.URI, "error", err.Error(), "attempts", failed.Attempts)
		if err := save(ctx, provisioning.Result{State: failed.Map()}); err != nil {
			return progress, nil, err
		}
		return failed, &provisioning.Progress{Phase: provisioning.ProgressRetrying, Message: err.Error(), After: max(failed.Next.Sub(now), time.Millisecond)}, nil
	}
	logr.FromContextOrDiscard(ctx).Info("Created through the API", "provisioner", def.URI)
	next := State{Phase: PhasePending, Created: body, Since: now, Message: "created"}
	if a.Status == nil {
		next = Observe(next, a, body, now)
	}
	next.Next = now.Add(interval)
	return next, nil, nil
}

// poll sends the status request and folds its answer into the progress. A failing status
// request is waited out like a pending status, up to the timeout.
func (c Client) poll(ctx context.Context, a *orchconfig.API, data provisioning.Data, progress State, now time.Time) State {
	interval, _ := Settings(a)
	data.State = progress.Map()
	next := progress
	body, err := c.Call(ctx, a, *a.Status, "GET", data)
	if err != nil {
		next.Polls++
		next.Message = err.Error()
		next, _ = TimedOut(next, a, now)
	} else {
		next = Observe(progress, a, body, now)
	}
	next.Next = now.Add(Backoff(interval, next.Polls))
	return next
}

func (c Client) now() time.Time {
	if c.Clock == nil {
		return time.Now()
	}
	return c.Clock.Now()
}
