package provisioner

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/provisionerapi"
	"github.com/score-orchestrator/score-orchestrator/internal/provisionermatch"
	"github.com/score-orchestrator/score-orchestrator/internal/provisioning"
	"github.com/score-orchestrator/score-orchestrator/internal/values"
)

// provisionAPI takes an http+api:// instance one step: create it, or poll its status once
// when the next poll is due, then publish it when ready. It never waits in the reconcile: a
// pending instance comes back with RequeueAfter, the wait doubling per poll.
func (r *Reconciler) provisionAPI(ctx context.Context, c *scorev1b1.ResourceClaim, def orchconfig.Provisioner, id provisioning.Identity, data provisioning.Data, st instanceState) (ctrl.Result, error) {
	a := def.API
	progress, err := provisionerapi.StateFrom(st.State)
	if err != nil {
		setPhase(c, scorev1b1.ClaimPhaseFailed, scorev1b1.ReasonClaimFailed, fmt.Sprintf("Provisioner %s: %v.", def.URI, err))
		return ctrl.Result{}, nil
	}
	now := r.clock().Now()
	interval, _ := provisionerapi.Settings(a)
	next := progress
	switch {
	case progress.Phase == provisionerapi.PhaseCreating || progress.Phase == provisionerapi.PhaseSending:
		due, wait := provisionerapi.CreateDue(progress, now)
		switch {
		case !due && progress.Phase == provisionerapi.PhaseSending:
			// Another claim of the instance is sending the create request; its outcome, in the
			// state, is read on a later pass.
			setPhase(c, scorev1b1.ClaimPhaseBinding, "", fmt.Sprintf("Waiting for %s: another claim of the instance is creating it.", def.URI))
			c.Status.ObservedGeneration = c.Generation
			return ctrl.Result{RequeueAfter: min(wait, interval)}, nil
		case !due:
			// The last create request failed; it is sent again at the time the state keeps.
			setPhase(c, scorev1b1.ClaimPhaseFailed, scorev1b1.ReasonClaimFailed, fmt.Sprintf("Provisioner %s: %s.", def.URI, progress.Message))
			return ctrl.Result{RequeueAfter: wait}, nil
		}
		// Recorded before sending, on top of the state as read: of the claims of the instance
		// that read it, this write succeeds for one, which sends the request (CreateDue).
		sending := provisionerapi.State{Phase: provisionerapi.PhaseSending, Since: now, Attempts: progress.Attempts}
		if err := r.saveState(ctx, id, &st, provisioning.Result{State: sending.Map()}); err != nil {
			return ctrl.Result{}, err
		}
		body, err := r.callAPI(ctx, a, a.Create, "POST", data)
		if err != nil {
			// Nothing was created. The state says when to send it again (if that write fails,
			// the Sending state lapses after SendWindow); the instance's claims wait for it.
			failed := provisionerapi.CreateFailed(sending, a, err.Error(), r.clock().Now())
			ctrl.LoggerFrom(ctx).Info("The create request failed; it is sent again later", "provisioner", def.URI, "error", err.Error(), "attempts", failed.Attempts)
			setPhase(c, scorev1b1.ClaimPhaseFailed, scorev1b1.ReasonClaimFailed, fmt.Sprintf("Provisioner %s: %v.", def.URI, err))
			if err := r.saveState(ctx, id, &st, provisioning.Result{State: failed.Map()}); err != nil {
				return ctrl.Result{}, err
			}
			return ctrl.Result{RequeueAfter: max(failed.Next.Sub(now), time.Millisecond)}, nil
		}
		ctrl.LoggerFrom(ctx).Info("Created through the API", "provisioner", def.URI)
		next = provisionerapi.State{Phase: provisionerapi.PhasePending, Created: body, Since: now, Message: "created"}
		if a.Status == nil {
			next = provisionerapi.Observe(next, a, body, now)
		}
		next.Next = now.Add(interval)
	case progress.Phase == provisionerapi.PhasePending && !now.Before(progress.Next):
		data.State = progress.Map()
		body, err := r.callAPI(ctx, a, *a.Status, "GET", data)
		if err != nil {
			// A failing status request is waited out like a pending status, up to the timeout.
			next.Polls++
			next.Message = err.Error()
			next, _ = provisionerapi.TimedOut(next, a, now)
		} else {
			next = provisionerapi.Observe(progress, a, body, now)
		}
		next.Next = now.Add(provisionerapi.Backoff(interval, next.Polls))
	}
	if err := r.saveState(ctx, id, &st, provisioning.Result{State: next.Map()}); err != nil {
		return ctrl.Result{}, err
	}
	c.Status.ObservedGeneration = c.Generation
	switch next.Phase {
	case provisionerapi.PhasePending:
		setPhase(c, scorev1b1.ClaimPhaseBinding, "", fmt.Sprintf("Waiting for %s: %s.", def.URI, next.Message))
		return ctrl.Result{RequeueAfter: max(next.Next.Sub(now), time.Millisecond)}, nil
	case provisionerapi.PhaseFailed:
		// Terminal for this instance: deleting the claim (under Delete) calls the delete
		// request, and the re-created claim starts afresh.
		setPhase(c, scorev1b1.ClaimPhaseFailed, scorev1b1.ReasonClaimFailed, fmt.Sprintf("Provisioner %s failed: %s.", def.URI, next.Message))
		return ctrl.Result{}, nil
	}
	data.State = next.Map()
	outputs, err := provisioning.RenderOutputs(def, data)
	if err != nil {
		setPhase(c, scorev1b1.ClaimPhaseFailed, scorev1b1.ReasonClaimFailed, fmt.Sprintf("Provisioner %s failed: %v.", def.URI, err))
		return ctrl.Result{}, reconcileErr(err)
	}
	plain, secret, err := provisioning.SplitOutputs(outputs, func(ref provisioning.SecretRef) (string, error) {
		return readSecretKey(ctx, r.secrets.Get, id.Namespace, ref)
	})
	if err != nil {
		setPhase(c, scorev1b1.ClaimPhaseFailed, scorev1b1.ReasonClaimFailed, fmt.Sprintf("Provisioner %s: %v.", def.URI, err))
		return ctrl.Result{}, reconcileErr(err)
	}
	provisionerapi.SecretOutputs(a.SecretOutputs, plain, secret)
	return ctrl.Result{}, r.publish(ctx, c, def, plain, secret, nil)
}

// releaseAPI sends an http+api:// instance's delete request, when it has one and something
// was created. A 404 or 410 answer means it is already gone.
func (r *Reconciler) releaseAPI(ctx context.Context, c *scorev1b1.ResourceClaim, id provisioning.Identity) error {
	if !strings.HasPrefix(c.Status.Provisioner, "http+api://") {
		return nil
	}
	loaded, err := r.configOf(ctx, c)
	if errors.Is(err, errNotKept) {
		loaded, err = nil, nil
		if l, ok := r.Config.Get(); ok {
			loaded = l // the definition by its URI, as it is now
		}
	}
	if err != nil || loaded == nil {
		return errors.Join(errors.New("waiting for the platform configuration to send the delete request"), err)
	}
	var def *orchconfig.Provisioner
	for i := range loaded.Config.Provisioners {
		if loaded.Config.Provisioners[i].URI == c.Status.Provisioner {
			def = &loaded.Config.Provisioners[i]
		}
	}
	if def == nil || def.API == nil || def.API.Delete == nil {
		ctrl.LoggerFrom(ctx).Info("No delete request to send; the external dependency stays", "provisioner", c.Status.Provisioner)
		return nil
	}
	st, err := r.loadState(ctx, id, readsShared(*def))
	if err != nil {
		return err
	}
	progress, err := provisionerapi.StateFrom(st.State)
	if err != nil || progress.Created == nil {
		return nil // nothing was created
	}
	claimParams, _ := values.Object(c.Spec.Params)
	served, _, _ := provisionermatch.Resolve(provisionermatch.Input{Classes: loaded.Config.Classes, Provisioners: loaded.Config.Provisioners,
		Claim: provisionermatch.Claim{Type: c.Spec.Type, Class: c.Spec.Class, ID: c.Spec.ID, Params: claimParams}})
	data, err := r.templateData(ctx, c, *def, id, served.Class, served.Params, st)
	if err != nil {
		return err
	}
	_, err = r.callAPI(ctx, def.API, *def.API.Delete, "DELETE", data)
	var se *provisionerapi.StatusError
	if errors.As(err, &se) && (se.Code == http.StatusNotFound || se.Code == http.StatusGone) {
		err = nil
	}
	if err == nil {
		ctrl.LoggerFrom(ctx).Info("Deleted through the API", "provisioner", def.URI)
	}
	return err
}

// callAPI renders one request, adds the credentials header, and sends it (provisionerapi.Send).
func (r *Reconciler) callAPI(ctx context.Context, a *orchconfig.API, tpl orchconfig.APIRequest, method string, data provisioning.Data) (map[string]any, error) {
	req, err := provisionerapi.Render(tpl, method, data)
	if err != nil {
		return nil, err
	}
	if cr := a.Credentials; cr != nil {
		s := &corev1.Secret{}
		if err := r.secrets.Get(ctx, client.ObjectKey{Namespace: r.APINamespace, Name: cr.SecretRef.Name}, s); err != nil {
			return nil, fmt.Errorf("the credentials Secret %s/%s: %w", r.APINamespace, cr.SecretRef.Name, err)
		}
		v, ok := s.Data[cr.SecretRef.Key]
		if !ok {
			return nil, fmt.Errorf("the credentials Secret %s/%s has no key %s", r.APINamespace, cr.SecretRef.Name, cr.SecretRef.Key)
		}
		header := cr.Header
		if header == "" {
			header = "Authorization"
		}
		req.Headers[header] = cr.Prefix + string(v)
	}
	return provisionerapi.Send(ctx, r.HTTPClient, req)
}

func (r *Reconciler) clock() clock.PassiveClock {
	if r.Clock == nil {
		return clock.RealClock{}
	}
	return r.Clock
}
