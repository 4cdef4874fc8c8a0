// Package tcpproxy is a TCP proxy in front of an API server that can go dark: it then still
// accepts connections and reads what is sent, but forwards nothing either way and closes
// nothing, as a network that drops packets does; lit again, it forwards what it held. Tests
// and the benchmark reach a member cluster through one to make it silent at will.
package tcpproxy

import (
	"fmt"
	"net"
	"net/url"
	"sync"
)

// Proxy forwards TCP connections to one address.
type Proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	lit   *sync.Cond
	dark  bool
	conns []net.Conn
}

// New forwards to server (an API server URL) from a port of its own on the loopback
// interface, and returns the URL to reach the server through it.
func New(server string) (*Proxy, string, error) {
	u, err := url.Parse(server)
	if err != nil || u.Host == "" {
		return nil, "", fmt.Errorf("the server %q: %v", server, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	p := &Proxy{ln: ln, target: u.Host}
	p.lit = sync.NewCond(&p.mu)
	go p.serve()
	return p, "https://" + ln.Addr().String(), nil
}

// SetDark darkens the proxy (true) or lights it again (false).
func (p *Proxy) SetDark(dark bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dark = dark
	if !dark {
		p.lit.Broadcast()
	}
}

// Close lights the proxy, stops accepting and closes every connection.
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

// pipe copies from src to dst, holding what it read while dark. It reads on while dark, so
// that nothing looks closed to the sender.
func (p *Proxy) pipe(src, dst net.Conn) {
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
func (p *Proxy) wait() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.dark {
		p.lit.Wait()
	}
}
