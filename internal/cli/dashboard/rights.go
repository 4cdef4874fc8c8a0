package dashboard

import (
	"sync"
	"time"
)

// rightsTTL is how long an answer about the user's rights is trusted: a RoleBinding granted or
// removed shows within it.
const rightsTTL = 30 * time.Second

// maxRights bounds the answers held. Each stream's address names the Workload its questions are
// about, and whoever reaches the server chooses the address: without a bound, walking through
// addresses would grow the server without end. A page asks about five things, so this holds
// the answers for some two hundred Workloads watched within rightsTTL.
const maxRights = 1024

// accessKey is one question about the user's rights: may they verb this resource.
type accessKey struct{ verb, group, resource, namespace, name string }

type accessAnswer struct {
	allowed bool
	at      time.Time
}

// rightsCache keeps the API server's answers about the user's rights for rightsTTL, so that a
// page rendered again after every change does not ask again each time. It holds at most
// maxRights answers; expired ones are dropped when another is kept (at most once per
// rightsTTL, so that keeping an answer does not walk them all each time) and when read.
type rightsCache struct {
	now func() time.Time

	mu      sync.Mutex
	answers map[accessKey]accessAnswer
	// swept is when the expired answers were last dropped.
	swept time.Time
}

func newRightsCache(now func() time.Time) *rightsCache {
	return &rightsCache{now: now, answers: map[accessKey]accessAnswer{}}
}

// get is the answer to k, when one younger than rightsTTL is held.
func (c *rightsCache) get(k accessKey) (allowed, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.answers[k]
	if !ok {
		return false, false
	}
	if c.now().Sub(a.at) >= rightsTTL {
		delete(c.answers, k)
		return false, false
	}
	return a.allowed, true
}

// put keeps the answer to k: first it drops the expired answers (at most once per rightsTTL,
// or when full), then, when still full, the oldest.
func (c *rightsCache) put(k accessKey, allowed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	_, held := c.answers[k]
	full := !held && len(c.answers) >= maxRights
	if full || now.Sub(c.swept) >= rightsTTL {
		for key, a := range c.answers {
			if now.Sub(a.at) >= rightsTTL {
				delete(c.answers, key)
			}
		}
		c.swept = now
	}
	if !held && len(c.answers) >= maxRights {
		oldest, first := accessKey{}, true
		for key, a := range c.answers {
			if first || a.at.Before(c.answers[oldest].at) {
				oldest, first = key, false
			}
		}
		delete(c.answers, oldest)
	}
	c.answers[k] = accessAnswer{allowed, now}
}

// len is how many answers are held.
func (c *rightsCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.answers)
}
