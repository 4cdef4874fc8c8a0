// Package configsource keeps the last valid Orchestrator Config. A source (the ConfigMap
// reconciler here) offers documents; a document becomes current only when it parses and
// validates, so an invalid document never replaces the last valid one.
package configsource

import (
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/objects/health"
	"github.com/score-orchestrator/score-orchestrator/internal/planning/selection"
)

// Loaded is a valid config, ready to use.
type Loaded struct {
	Config   *orchconfig.Config
	Selector *selection.Selector
	// Health judges applied and provisioned objects with the config's health rules.
	Health *health.Checker
	// Revision names the document by its content: "sha256:" and the hex digest of its bytes.
	// The same document offered again, from the same source or another, is the same revision.
	Revision string
	// Source says where it came from: "configmap", or "oci/" and the artifact's digest.
	Source string
	// Document is the document as admitted (its bytes are the revision's).
	Document []byte
}

// Load parses and validates a document: a config ready to use, or the error (an
// *orchconfig.InvalidError with line-numbered problems).
func Load(source string, data []byte) (*Loaded, error) {
	cfg, err := orchconfig.Parse(data)
	if err != nil {
		return nil, err
	}
	sel, err := selection.New(cfg)
	if err != nil {
		return nil, err
	}
	checker, err := health.New(cfg.Health)
	if err != nil {
		return nil, err
	}
	return &Loaded{Config: cfg, Selector: sel, Health: checker, Revision: orchconfig.Revision(data), Source: source, Document: data}, nil
}

// KeptRevisions is how many admitted revisions the store keeps, the current one included.
const KeptRevisions = 10

// Store holds the current config, the revisions admitted before it, and tells subscribers
// when the current one changes.
type Store struct {
	mu      sync.RWMutex
	current *Loaded
	// history holds the last KeptRevisions admitted revisions, the current one last.
	history     []*Loaded
	settled     bool
	subscribers []chan event.GenericEvent
}

// Settled reports whether the source has made its first attempt: a config was loaded, or
// there was none to load, or it was invalid. Until then controllers write nothing: a
// controller that restarts must not report "waiting for the platform configuration" just
// because its config source has not read the config yet.
func (s *Store) Settled() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.settled
}

// Settle marks the first attempt as made, and tells subscribers when that is news.
func (s *Store) Settle() {
	s.mu.Lock()
	was := s.settled
	s.settled = true
	subscribers := s.subscribers
	s.mu.Unlock()
	if !was {
		notify(subscribers)
	}
}

func notify(subscribers []chan event.GenericEvent) {
	for _, ch := range subscribers {
		// A pending notification already covers this change.
		select {
		case ch <- event.GenericEvent{}:
		default:
		}
	}
}

// NewStore returns an empty store.
func NewStore() *Store {
	return &Store{}
}

// Subscribe returns a channel that receives an event each time a new valid config becomes
// current; controllers watch it to requeue what a config change can affect.
func (s *Store) Subscribe() <-chan event.GenericEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := make(chan event.GenericEvent, 1)
	s.subscribers = append(s.subscribers, ch)
	return ch
}

// Get returns the current config, or false before any valid config was seen.
func (s *Store) Get() (*Loaded, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.current, s.current != nil
}

// Health is the current config's health checker; nil (kstatus alone) before a config is
// loaded or on a nil Store.
func (s *Store) Health() *health.Checker {
	if s == nil {
		return nil
	}
	if l, ok := s.Get(); ok {
		return l.Health
	}
	return nil
}

// KindAllowed reports whether the current config lets templates and provisioners create a
// kind (its allowedKinds); before a config is loaded, and on a nil Store, the default kinds.
func (s *Store) KindAllowed(group, kind string) bool {
	cfg := &orchconfig.Config{}
	if s != nil {
		if l, ok := s.Get(); ok {
			cfg = l.Config
		}
	}
	return cfg.KindAllowed(group, kind)
}

// Judge judges an applied object's health with the current config's rules (kstatus alone
// before a config is loaded).
func (s *Store) Judge(u *unstructured.Unstructured) (string, string) {
	return s.Health().Judge(u)
}

// Revision returns an admitted revision the store still keeps.
func (s *Store) Revision(revision string) (*Loaded, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, l := range s.history {
		if l.Revision == revision {
			return l, true
		}
	}
	return nil, false
}

// Revisions lists the kept revisions, oldest first; the last is current.
func (s *Store) Revisions() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]string, len(s.history))
	for i, l := range s.history {
		out[i] = l.Revision
	}
	return out
}

// Offer parses and validates a document from source. When valid it becomes current (a
// revision named by its content) and subscribers are told; when invalid the current config
// stays and the error (an *orchconfig.InvalidError with line-numbered problems) is returned.
// changed is false when the document is the one already current, whatever its source.
func (s *Store) Offer(source string, data []byte) (changed bool, err error) {
	loaded, err := Load(source, data)
	if err != nil {
		s.Settle()
		return false, err
	}
	revision := loaded.Revision
	s.mu.Lock()
	if s.current != nil && s.current.Revision == revision {
		s.current.Source = source
		s.mu.Unlock()
		return false, nil
	}
	s.current = loaded
	s.history = slices.DeleteFunc(s.history, func(l *Loaded) bool { return l.Revision == revision })
	s.history = append(s.history, s.current)
	if n := len(s.history) - KeptRevisions; n > 0 {
		s.history = slices.Delete(s.history, 0, n)
	}
	s.settled = true
	subscribers := s.subscribers
	s.mu.Unlock()
	notify(subscribers)
	return true, nil
}
