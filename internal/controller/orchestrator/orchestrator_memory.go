package orchestrator

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/controller/ownwrites"
	"github.com/score-orchestrator/score-orchestrator/internal/status/workloaddecision"
)

// memory remembers, per Workload, the writes whose effect the informer cache may not show
// yet: the status last written (and the versions our writes replaced) and the objects just
// created. A pass that reads a stale cache then neither writes the same status again nor
// creates an object twice: both would be wasted writes (the second a rejected one), and the
// first would repeat events.
type memory struct {
	mu sync.Mutex
	m  map[types.UID]*remembered
	// versions are the Workload versions our own writes (status, finalizer) replaced.
	versions ownwrites.Tracker
}

type remembered struct {
	// status is what our last status write wrote: the status of every version after the
	// ones versions holds.
	status *scorev1b1.WorkloadStatus
	// created are objects created but perhaps not yet in the cache, with the time of the
	// creation (or of the last check that they still exist).
	created map[workloaddecision.Ref]time.Time
}

// pendingFor is how long an object created by the orchestrator is taken to exist without
// asking, while the cache does not show it. After that the API server is asked: one created
// and deleted before the cache saw it (a claim reset in that moment, a watch re-listed in
// between) would otherwise never be created again until the process restarts.
const pendingFor = 10 * time.Second

// creation is what memory knows of an object the orchestrator created.
type creation int

const (
	// notCreated: nothing created that the cache has not shown; the cache is the truth.
	notCreated creation = iota
	// createdRecently: created less than pendingFor ago; the cache will show it.
	createdRecently
	// createdLongAgo: created pendingFor ago or more, and still not in the cache: ask.
	createdLongAgo
)

func (m *memory) get(uid types.UID) *remembered {
	if m.m == nil {
		m.m = map[types.UID]*remembered{}
	}
	r, ok := m.m[uid]
	if !ok {
		r = &remembered{created: map[workloaddecision.Ref]time.Time{}}
		m.m[uid] = r
	}
	return r
}

// statusAsOf returns the status the Workload really has when the cache shows
// resourceVersion: ours if the cache still shows a version our writes replaced.
func (m *memory) statusAsOf(uid types.UID, resourceVersion string, cached *scorev1b1.WorkloadStatus) *scorev1b1.WorkloadStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r := m.get(uid); r.status != nil && m.versions.Behind(uid, resourceVersion) {
		return r.status.DeepCopy()
	}
	return cached
}

// wroteStatus records a status write that replaced the version replaced and produced the
// version produced.
func (m *memory) wroteStatus(uid types.UID, replaced, produced string, status *scorev1b1.WorkloadStatus) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.versions.Wrote(uid, replaced, produced)
	m.get(uid).status = status.DeepCopy()
}

// statusWrite records a status write of the orchestrator's, with the status it wrote.
type statusWrite struct {
	m      *memory
	status *scorev1b1.WorkloadStatus
}

// Wrote records the write (statuspatch.Recorder).
func (s statusWrite) Wrote(uid types.UID, replaced, produced string) {
	s.m.wroteStatus(uid, replaced, produced, s.status)
}

// wroteMetadata records a write of ours other than the status (the finalizer).
func (m *memory) wroteMetadata(uid types.UID, replaced, produced string) {
	m.versions.Wrote(uid, replaced, produced)
}

// created records an object created for the Workload at now (or found to exist at now).
func (m *memory) created(uid types.UID, ref workloaddecision.Ref, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.get(uid).created[ref] = now
}

// uncached lists the objects created for the Workload that the cache has not shown yet.
func (m *memory) uncached(uid types.UID) []workloaddecision.Ref {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.m[uid]
	if !ok {
		return nil
	}
	refs := make([]workloaddecision.Ref, 0, len(r.created))
	for ref := range r.created {
		refs = append(refs, ref)
	}
	return refs
}

// creation says whether an object was created that the cache may not show yet, and whether
// that was recently enough to take it on trust at now; seen forgets it once the cache shows
// it.
func (m *memory) creation(uid types.UID, ref workloaddecision.Ref, now time.Time) creation {
	m.mu.Lock()
	defer m.mu.Unlock()
	at, ok := m.get(uid).created[ref]
	switch {
	case !ok:
		return notCreated
	case now.Sub(at) < pendingFor:
		return createdRecently
	default:
		return createdLongAgo
	}
}

func (m *memory) seen(uid types.UID, ref workloaddecision.Ref) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.m[uid]; ok {
		delete(r.created, ref)
	}
}

// forget drops everything about a Workload that is gone.
func (m *memory) forget(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.m, uid)
	m.versions.Forget(uid)
}
