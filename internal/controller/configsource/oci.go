package configsource

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/score-orchestrator/score-orchestrator/internal/rendering/ocifetch"
)

// Media types of an Orchestrator Config published as an OCI artifact: one layer holding the
// YAML document.
const (
	ConfigArtifactType   = "application/vnd.score.dev.orchestrator-config.v1"
	ConfigLayerMediaType = "application/vnd.score.dev.orchestrator-config.v1+yaml"
)

// OCISource loads the Orchestrator Config from an OCI artifact pinned by digest. The
// content of a digest never changes, so the document is loaded once; a registry failure is
// retried with backoff (the verified disk cache answers meanwhile, if it holds the digest).
type OCISource struct {
	// Ref is <registry>/<repository>@sha256:<hex>.
	Ref     string
	Fetcher *ocifetch.Fetcher
	Store   *Store
	// MaxBackoff bounds the wait between failed fetches (default one minute).
	MaxBackoff time.Duration
}

// NeedLeaderElection is false: every replica needs the config.
func (s *OCISource) NeedLeaderElection() bool { return false }

// Start fetches the document and offers it to the store.
func (s *OCISource) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithValues("ref", s.Ref)
	backoff, maxBackoff := time.Second, s.MaxBackoff
	if maxBackoff <= 0 {
		maxBackoff = time.Minute
	}
	for {
		r, err := s.Fetcher.Fetch(ctx, s.Ref, ConfigLayerMediaType)
		if err == nil {
			if r.FromCache {
				log.Info("Registry unreachable; using the verified cached config", "error", r.FetchErr.Error())
			}
			if _, err := s.Store.Offer("oci/"+r.Digest, r.Data); err != nil {
				ReloadsTotal.WithLabelValues("oci", "failure").Inc()
				log.Error(err, "Rejected the orchestrator config; keeping the last valid one")
				return nil // pinned content does not change: retrying cannot help
			}
			ReloadsTotal.WithLabelValues("oci", "success").Inc()
			log.Info("Loaded orchestrator config", "digest", r.Digest)
			return nil
		}
		ReloadsTotal.WithLabelValues("oci", "failure").Inc()
		s.Store.Settle()
		log.Error(err, "Fetching the orchestrator config failed; retrying", "backoff", backoff.String())
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, maxBackoff)
	}
}
