package urgency

import (
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// rankRoom is the room each priority leaves for the ranks within it: a namespace's k-th
// waiting request of priority p enters the queue at p×rankRoom − k.
const rankRoom = 1 << 20

// FairQueue is a controller's NewQueue (controller.Options): controller-runtime's priority
// queue in which, within each priority, namespaces take turns. A request enters behind the
// requests of its own namespace that are already waiting, and ahead of a namespace's k-th
// waiting request when it is its namespace's first: a team that creates 5,000 Workloads at
// once is served in turn with everyone else, rather than ahead of them all. Priorities keep
// their order (urgent requests first, the initial listing last), and the controller sees each
// request's own priority.
func FairQueue(name string, rateLimiter workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	return newFair(priorityqueue.New(name, func(o *priorityqueue.Opts[reconcile.Request]) { o.RateLimiter = rateLimiter }))
}

func newFair(q priorityqueue.PriorityQueue[reconcile.Request]) *fairQueue {
	return &fairQueue{PriorityQueue: q, waiting: map[string]map[reconcile.Request]int{}}
}

type fairQueue struct {
	priorityqueue.PriorityQueue[reconcile.Request]

	mu sync.Mutex
	// waiting holds, per namespace, the requests added and not handed out yet, with the
	// highest priority each was added with.
	waiting map[string]map[reconcile.Request]int
}

func (q *fairQueue) AddWithOpts(o priorityqueue.AddOpts, items ...reconcile.Request) {
	nominal := ptr.Deref(o.Priority, 0)
	for _, item := range items {
		q.mu.Lock()
		ns := q.waiting[item.Namespace]
		if ns == nil {
			ns = map[reconcile.Request]int{}
			q.waiting[item.Namespace] = ns
		}
		if p, ok := ns[item]; !ok || nominal > p {
			ns[item] = nominal
		}
		rank := min(len(ns)-1, rankRoom-1)
		q.mu.Unlock()
		o.Priority = ptr.To(nominal*rankRoom - rank)
		q.PriorityQueue.AddWithOpts(o, item)
	}
}

func (q *fairQueue) Add(item reconcile.Request) {
	q.AddWithOpts(priorityqueue.AddOpts{}, item)
}

func (q *fairQueue) AddAfter(item reconcile.Request, after time.Duration) {
	q.AddWithOpts(priorityqueue.AddOpts{After: after}, item)
}

func (q *fairQueue) AddRateLimited(item reconcile.Request) {
	q.AddWithOpts(priorityqueue.AddOpts{RateLimited: true}, item)
}

// GetWithPriority hands out the next request with the priority it was added with.
func (q *fairQueue) GetWithPriority() (reconcile.Request, int, bool) {
	item, _, shutdown := q.PriorityQueue.GetWithPriority()
	if shutdown {
		return item, 0, shutdown
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	ns := q.waiting[item.Namespace]
	priority := ns[item]
	delete(ns, item)
	if len(ns) == 0 {
		delete(q.waiting, item.Namespace)
	}
	return item, priority, false
}

func (q *fairQueue) Get() (reconcile.Request, bool) {
	item, _, shutdown := q.GetWithPriority()
	return item, shutdown
}
