package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/rest"
)

// apiProfileChunk is the length of each CPU profile a window profile is taken in. The API
// server's profile handler writes nothing if its request is cancelled, so a window of unknown
// length is covered by back-to-back profiles of this length, each saved as it comes (`go tool
// pprof DIR/*.pprof` merges them): they run past the window's end by less than one chunk.
const apiProfileChunk = 2 * time.Second

// windowProfile is a CPU profile of the hub's kube-apiserver over a window of the run
// (--apiserver-profile), taken while the window lasts.
type windowProfile struct {
	dir    string
	stop   chan struct{}
	done   chan struct{}
	chunks int
	err    error
	start  time.Time
}

// profileAPIServer starts a CPU profile of the hub's API server over the window named name;
// end stops it after the chunk under way. The chunks go to a directory beside the result
// (OUT.kube-apiserver-NAME/). Nil when --apiserver-profile is off.
func (s *runState) profileAPIServer(ctx context.Context, name string) *windowProfile {
	if !s.o.apiProfile {
		return nil
	}
	out := strings.TrimSuffix(s.o.out, filepath.Ext(s.o.out))
	w := &windowProfile{dir: fmt.Sprintf("%s.kube-apiserver-%s", out, name), stop: make(chan struct{}), done: make(chan struct{}), start: time.Now()}
	hc, err := rest.HTTPClientFor(s.cfg)
	if err == nil {
		err = os.MkdirAll(w.dir, 0o755)
	}
	if err != nil {
		w.err = err
		close(w.done)
		return w
	}
	url := strings.TrimSuffix(s.cfg.Host, "/") + fmt.Sprintf("/debug/pprof/profile?seconds=%d", int(apiProfileChunk/time.Second))
	go func() {
		defer close(w.done)
		for {
			select {
			case <-w.stop:
				return
			case <-ctx.Done():
				w.err = ctx.Err()
				return
			default:
			}
			p, err := fetch(ctx, hc, url)
			if err == nil {
				err = os.WriteFile(filepath.Join(w.dir, fmt.Sprintf("%04d.pprof", w.chunks)), p, 0o644)
			}
			if err != nil {
				w.err = err
				return
			}
			w.chunks++
		}
	}()
	return w
}

// end stops the profile after the chunk under way, and logs what it wrote.
func (w *windowProfile) end(s *runState) {
	if w == nil {
		return
	}
	window := time.Since(w.start)
	close(w.stop)
	<-w.done
	covered := time.Since(w.start)
	if w.err == nil && w.chunks == 0 {
		w.err = fmt.Errorf("no profile taken")
	}
	if w.err != nil {
		logf(s.log, "profile kube-apiserver %s: %v", w.dir, w.err)
		return
	}
	logf(s.log, "profile kube-apiserver: %s (%d profiles of %s over a window of %.1fs, profiled %.1fs)",
		w.dir, w.chunks, apiProfileChunk, window.Seconds(), covered.Seconds())
}

// fetch returns what a GET of the API server's url answers (a profile, the metrics).
func fetch(ctx context.Context, hc *http.Client, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(body))
	}
	return body, nil
}
