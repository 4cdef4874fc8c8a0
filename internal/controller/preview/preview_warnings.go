package preview

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// notEndedWarnings remembers, per preview namespace, the PreviewNotEnded warning last recorded
// about it, so that the warning is recorded on a transition only: when a preview the controller
// may not act on is found expired, or when what the warning says (why, or when it expired)
// changes. Every config and policy change brings every preview back, and each such pass would
// otherwise record the warning again. An entry is dropped when its namespace is found gone,
// being deleted, no preview, trusted or not expired (expiring again is a transition), so the
// entries are at most the expired previews left as they are; a restart forgets them all, and
// each is then warned of once more.
type notEndedWarnings struct {
	mu   sync.Mutex
	said map[string]warning
}

// warning is what was said about a namespace: its UID (a namespace made anew under the same
// name is another) and the event's note.
type warning struct {
	uid  types.UID
	note string
}

// news reports whether note is not what was last said about the namespace, and remembers it
// as said.
func (w *notEndedWarnings) news(namespace string, uid types.UID, note string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	said := warning{uid: uid, note: note}
	if w.said[namespace] == said {
		return false
	}
	if w.said == nil {
		w.said = map[string]warning{}
	}
	w.said[namespace] = said
	return true
}

// forget drops what was said about the namespace: the next warning about it is news.
func (w *notEndedWarnings) forget(namespace string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.said, namespace)
}
