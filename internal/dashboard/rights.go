package dashboard

import (
	"sync"
	"time"
)

// rightsTTL is how long an answer about the user's rights is trusted: a RoleBinding granted or
// removed shows within it.
const rightsTTL = 30 * time.Second

// accessKey is one question about the user's rights: may they verb this resource.
type accessKey struct{ verb, group, resource, namespace, name string }

type accessAnswer struct {
	allowed bool
	at      time.Time
}

// rightsCache keeps the API server's answers about the user's rights for rightsTTL, so that a
// page rendered again after every change does not ask again each time.
type rightsCache struct {
	now func() time.Time

	mu      sync.Mutex
	answers map[accessKey]accessAnswer
}

func newRightsCache(now func() time.Time) *rightsCache {
	return &rightsCache{now: now, answers: map[accessKey]accessAnswer{}}
}

// get is the answer to k, when one younger than rightsTTL is held.
func (c *rightsCache) get(k accessKey) (allowed, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.answers[k]
	if !ok || c.now().Sub(a.at) >= rightsTTL {
		return false, false
	}
	return a.allowed, true
}

// put keeps the answer to k.
func (c *rightsCache) put(k accessKey, allowed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.answers[k] = accessAnswer{allowed, c.now()}
}

// len is how many answers are held.
func (c *rightsCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.answers)
}
