// Package blackhole is a TCP proxy in front of an API server that can go dark: it then still
// accepts connections and reads what is sent, but forwards nothing either way and closes
// nothing, as a network that drops packets does; lit again, it forwards what it held. The
// black-hole integration test and the chaos run reach a member cluster through one.
package blackhole

import (
	"fmt"
	"net"
	"net/url"
	"sync"
)

// Proxy forwards TCP connections to a server until it is darkened.
type Proxy struct {
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

// New forwards to server (an API server URL) and returns the proxy and its own URL, on the
// loopback interface. Close stops it.
func New(server string) (*Proxy, string, error) {
	u, err := url.Parse(server)
	if err != nil || u.Host == "" {
		return nil, "", fmt.Errorf("the server %q: %v", server, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	p := &Proxy{ln: ln, target: u.Host, held: map[net.Conn]bool{}, established: map[net.Conn]bool{}}
	p.lit = sync.NewCond(&p.mu)
	go p.serve()
	return p, "https://" + ln.Addr().String(), nil
}

// Close lights the proxy, stops listening and closes every connection.
func (p *Proxy) Close() {
	p.SetDark(false)
	_ = p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
}

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.forward(c)
	}
}

// forward connects c to the target, once lit.
func (p *Proxy) forward(c net.Conn) {
	p.mu.Lock()
	p.conns = append(p.conns, c)
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
func (p *Proxy) pipe(src, dst, c net.Conn) {
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
func (p *Proxy) closed(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dark && p.established[c] {
		p.abandoned++
	}
}

// AbandonedWhileDark is how many connections forwarded before the proxy went dark the
// clients closed while it was dark.
func (p *Proxy) AbandonedWhileDark() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.abandoned
}

// wait returns once the proxy is lit.
func (p *Proxy) wait() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.dark {
		p.lit.Wait()
	}
}

// SetDark darkens or lights the proxy.
func (p *Proxy) SetDark(dark bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dark = dark
	if !dark {
		p.held = map[net.Conn]bool{}
		p.lit.Broadcast()
	}
}

// Holding is how many connections have something held since the proxy went dark.
func (p *Proxy) Holding() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.held)
}
