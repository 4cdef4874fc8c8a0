package workload

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/ownwrites"
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
	// created are objects created but perhaps not yet in the cache, by "kind/name".
	created map[string]bool
}

func (m *memory) get(uid types.UID) *remembered {
	if m.m == nil {
		m.m = map[types.UID]*remembered{}
	}
	r, ok := m.m[uid]
	if !ok {
		r = &remembered{created: map[string]bool{}}
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

// wroteMetadata records a write of ours other than the status (the finalizer).
func (m *memory) wroteMetadata(uid types.UID, replaced, produced string) {
	m.versions.Wrote(uid, replaced, produced)
}

// created records an object created for the Workload.
func (m *memory) created(uid types.UID, kind, name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.get(uid).created[kind+"/"+name] = true
}

// pending reports whether an object was created and the cache may not show it yet; seen
// forgets it once the cache does.
func (m *memory) pending(uid types.UID, kind, name string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.get(uid).created[kind+"/"+name]
}

func (m *memory) seen(uid types.UID, kind, name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.m[uid]; ok {
		delete(r.created, kind+"/"+name)
	}
}

// forget drops everything about a Workload that is gone.
func (m *memory) forget(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.m, uid)
	m.versions.Forget(uid)
}
