// Package failover tests placement.failover on real API servers: a hub running the
// controllers (in this process) and two member clusters, each a kube-apiserver and etcd of its
// own, one of them reached through a TCP proxy that goes dark (it accepts and reads, forwards
// nothing, closes nothing), as a member whose network drops packets.
package failover

import (
	"context"
	"net"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/score-orchestrator/score-orchestrator/internal/clusters/members"
	"github.com/score-orchestrator/score-orchestrator/internal/orchconfig"
	"github.com/score-orchestrator/score-orchestrator/internal/testing/testenv"
)

const controlPlane = "score-system"

var (
	env *testenv.Env
	ctx = context.Background()
)

func TestMain(m *testing.M) {
	// A member is probed every second here, and a Workload may fail over after seconds: the
	// rules are the same at any scale, only the waits are shorter.
	members.ProbeInterval, members.ProbeTimeout, members.RequestTimeout = time.Second, 2*time.Second, 5*time.Second
	orchconfig.MinFailoverAfter = time.Second
	os.Exit(testenv.Main(m, func(ctx context.Context, e *testenv.Env) error {
		env = e
		return testenv.CreateAll(ctx, env.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controlPlane}})
	}))
}

// proxy forwards TCP connections to a member's API server until it is darkened: then it still
// accepts connections and reads what is sent, but forwards nothing either way and closes
// nothing, as a network that drops packets does; lit again, it forwards what it held.
// (test/integration/blackhole's, without its counters.)
type proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	lit   *sync.Cond
	dark  bool
	conns []net.Conn
}

// newProxy forwards to server (an API server URL) and returns its own URL.
func newProxy(t *testing.T, server string) (*proxy, string) {
	t.Helper()
	u, err := url.Parse(server)
	if err != nil || u.Host == "" {
		t.Fatalf("the member's server %q: %v", server, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: u.Host}
	p.lit = sync.NewCond(&p.mu)
	go p.serve()
	t.Cleanup(func() {
		p.setDark(false)
		_ = ln.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range p.conns {
			_ = c.Close()
		}
	})
	return p, "https://" + ln.Addr().String()
}

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.forward(c)
	}
}

// forward connects c to the target, once lit.
func (p *proxy) forward(c net.Conn) {
	p.mu.Lock()
	p.conns = append(p.conns, c)
	p.mu.Unlock()
	p.wait()
	to, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, to)
	p.mu.Unlock()
	go p.pipe(c, to)
	go p.pipe(to, c)
}

// pipe copies from src to dst, holding what it read while dark.
func (p *proxy) pipe(src, dst net.Conn) {
	chunks := make(chan []byte, 4096)
	go func() {
		for chunk := range chunks {
			p.wait()
			if _, err := dst.Write(chunk); err != nil {
				break
			}
		}
		if tcp, ok := dst.(*net.TCPConn); ok {
			_ = tcp.CloseWrite()
		}
	}()
	defer close(chunks)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			chunks <- append([]byte(nil), buf[:n]...)
		}
		if err != nil {
			return
		}
	}
}

// wait returns once the proxy is lit.
func (p *proxy) wait() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.dark {
		p.lit.Wait()
	}
}

func (p *proxy) setDark(dark bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dark = dark
	if !dark {
		p.lit.Broadcast()
	}
}
