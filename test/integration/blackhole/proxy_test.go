package blackhole

import (
	"net"
	"net/url"
	"sync"
	"testing"
)

// proxy forwards TCP connections to a member's API server until it is darkened: then it
// still accepts connections and reads what is sent, but forwards nothing either way and
// closes nothing, as a network that drops packets does; lit again, it forwards what it held.
type proxy struct {
	ln     net.Listener
	target string

	mu   sync.Mutex
	lit  *sync.Cond
	dark bool
	// held counts the connections with bytes held while dark; conns are all of them.
	held  map[net.Conn]bool
	conns []net.Conn
	// established are the client connections forwarded before the proxy went dark, and
	// abandoned those of them the client closed while it was dark: it gave up on what it had
	// sent there (a request's timeout, HTTP/2's health check).
	established map[net.Conn]bool
	abandoned   int
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
	p := &proxy{ln: ln, target: u.Host, held: map[net.Conn]bool{}, established: map[net.Conn]bool{}}
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
	p.mu.Lock()
	if p.dark {
		p.held[c] = true
	}
	p.mu.Unlock()
	p.wait()
	to, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, to)
	p.established[c] = !p.dark
	p.mu.Unlock()
	go p.pipe(c, to, c)
	go p.pipe(to, c, c)
}

// pipe copies from src to dst, holding what it read while dark; c is the client's side. It
// reads on while dark, so that it sees the client close.
func (p *proxy) pipe(src, dst, c net.Conn) {
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
			p.mu.Lock()
			if p.dark {
				p.held[c] = true
			}
			p.mu.Unlock()
			chunks <- append([]byte(nil), buf[:n]...)
		}
		if err != nil {
			if src == c {
				p.closed(c)
			}
			return
		}
	}
}

// closed records that the client closed c.
func (p *proxy) closed(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dark && p.established[c] {
		p.abandoned++
	}
}

// abandonedWhileDark is how many connections forwarded before the proxy went dark the
// clients closed while it was dark.
func (p *proxy) abandonedWhileDark() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.abandoned
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
		p.held = map[net.Conn]bool{}
		p.lit.Broadcast()
	}
}

// holding is how many connections have something held since the proxy went dark.
func (p *proxy) holding() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.held)
}
