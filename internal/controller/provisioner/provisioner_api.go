package provisioner

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/config/provisionermatch"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/configsource"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/values"
	"github.com/score-orchestrator/score-orchestrator/internal/provisioners/provisionerapi"
	"github.com/score-orchestrator/score-orchestrator/internal/provisioners/provisioning"
)

// releaseAPI sends an http+api:// instance's delete request, when it has one and something
// was created. A 404 or 410 answer means it is already gone.
func (r *Reconciler) releaseAPI(ctx context.Context, c *scorev1b1.ResourceClaim, id provisioning.Identity) error {
	if !strings.HasPrefix(c.Status.Provisioner, "http+api://") {
		return nil
	}
	loaded, err := r.releaseConfig(ctx, c, "send the delete request")
	if err != nil {
		return err
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
		Claim: provisionermatch.Claim{Type: c.Spec.Type, Class: c.Spec.Class, ID: c.Spec.ID, Params: claimParams, RuntimeClass: c.Spec.RuntimeClass}})
	data, err := r.templateData(ctx, c, *def, id, served.Class, served.Params, st)
	if err != nil {
		return err
	}
	_, err = r.apiClient().Call(ctx, def.API, *def.API.Delete, "DELETE", provisioning.NewData(data))
	var se *provisionerapi.StatusError
	if errors.As(err, &se) && (se.Code == http.StatusNotFound || se.Code == http.StatusGone) {
		err = nil
	}
	if err == nil {
		ctrl.LoggerFrom(ctx).Info("Deleted through the API", "provisioner", def.URI)
	}
	return err
}

// releaseConfig is the config a deleted claim is released with: the revision it was provisioned
// from, else (no longer kept) the current one, where the definition of its URI is as it is now.
// Without one, the release waits for it, to do what to says.
func (r *Reconciler) releaseConfig(ctx context.Context, c *scorev1b1.ResourceClaim, to string) (*configsource.Loaded, error) {
	loaded, err := r.configOf(ctx, c)
	if errors.Is(err, errNotKept) {
		loaded, err = nil, nil
		if l, ok := r.Config.Get(); ok {
			loaded = l
		}
	}
	if err != nil || loaded == nil {
		return nil, errors.Join(errors.New("waiting for the platform configuration to "+to), err)
	}
	return loaded, nil
}

// apiClient makes the requests of http+api:// definitions, with the credentials Secrets of the
// controller's own namespace (APINamespace), never a claim's.
func (r *Reconciler) apiClient() provisionerapi.Client {
	return provisionerapi.Client{HTTP: r.HTTPClient, Clock: r.clock(), Credential: func(ctx context.Context, ref orchconfig.SecretKeyRef) (string, error) {
		s := &corev1.Secret{}
		if err := r.secrets.Get(ctx, client.ObjectKey{Namespace: r.APINamespace, Name: ref.Name}, s); err != nil {
			return "", fmt.Errorf("the credentials Secret %s/%s: %w", r.APINamespace, ref.Name, err)
		}
		v, ok := s.Data[ref.Key]
		if !ok {
			return "", fmt.Errorf("the credentials Secret %s/%s has no key %s", r.APINamespace, ref.Name, ref.Key)
		}
		return string(v), nil
	}}
}

func (r *Reconciler) clock() clock.PassiveClock {
	if r.Clock == nil {
		return clock.RealClock{}
	}
	return r.Clock
}
