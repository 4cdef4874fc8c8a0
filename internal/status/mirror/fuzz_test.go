package mirror

import (
	"net"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// urlSeeds are URLs the runtime publishes and URLs the mirror must refuse.
var urlSeeds = []string{
	"https://app.example.com/x?y=1",
	"http://web.ns.svc.cluster.local:80",
	"udp://dns.ns.svc.cluster.local:53",
	"http://203.0.113.7:8080",
	"http://[2001:db8::1]:80/",
	"http://localhost:8080",
	"http://127.0.0.1",
	"http://[::1]/",
	"https://user:secret@app.example.com",
	"not a url",
	"http://",
	"/path",
	"",
}

// FuzzValidateURL checks that whatever ValidateURL accepts is an absolute URL with a host,
// without credentials, that does not lead to the local machine however the host is spelled.
// The check of the last part is written independently of ValidateURL (isLocal below).
func FuzzValidateURL(f *testing.F) {
	for _, s := range urlSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if ValidateURL(raw) != nil {
			return
		}
		if raw == "" || strings.TrimSpace(raw) != raw {
			t.Fatalf("accepted an empty or padded URL %q", raw)
		}
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("accepted %q, which does not parse: %v", raw, err)
		}
		if u.Scheme == "" || u.Hostname() == "" {
			t.Fatalf("accepted %q without a scheme or a host", raw)
		}
		if u.User != nil {
			t.Fatalf("accepted %q, which carries credentials", raw)
		}
		if isLocal(u.Hostname()) {
			t.Fatalf("accepted %q, whose host %q is the local machine", raw, u.Hostname())
		}
	})
}

// FuzzMirror checks the mirror's result whatever the runtime publishes: the endpoint is null,
// the previous endpoint, or a URL ValidateURL accepts; never an empty string.
func FuzzMirror(f *testing.F) {
	templates := []string{"", "https://{{.workload.name}}.{{.workload.namespace}}.example.com", "{{.workload.name}}", "http://{{.workload.namespace}}"}
	for i, s := range urlSeeds {
		f.Add(s, "Public", int64(2), "web", "ns", uint8(i), i%2 == 0, i%3 == 0)
	}
	f.Fuzz(func(t *testing.T, published, scope string, generation int64, name, namespace string, template uint8, publicOnly, hasPrevious bool) {
		var previous *string
		if hasPrevious {
			previous = ptr.To("https://old.example.com")
		}
		e := exposure("u1", generation, scorev1b1.Exposure{URL: published, Scope: scorev1b1.ExposureScope(scope)})
		r := Mirror(Input{Exposure: e, WorkloadName: name, Namespace: namespace, WorkloadUID: "u1", WorkloadGeneration: 2, Previous: previous,
			Policy: Policy{PublicOnly: publicOnly, EndpointTemplate: templates[int(template)%len(templates)]}})
		if r.Endpoint == nil {
			return
		}
		if r.Endpoint == previous {
			if r.Rejected == "" && r.Ignored == "" {
				t.Fatalf("kept the previous endpoint without saying why")
			}
			return
		}
		if r.Ignored != "" {
			t.Fatalf("ignored the exposure (%s) yet mirrored %q", r.Ignored, *r.Endpoint)
		}
		if r.Rejected != "" {
			t.Fatalf("rejected (%s) yet mirrored %q", r.Rejected, *r.Endpoint)
		}
		if err := ValidateURL(*r.Endpoint); err != nil {
			t.Fatalf("mirrored an endpoint ValidateURL refuses: %v", err)
		}
	})
}

// isLocal reports whether a URL host leads to this machine: localhost and its subdomains in
// any case and with a trailing dot, loopback and unspecified addresses, IPv6 with a zone, and
// the shorthand IPv4 forms resolvers accept (127.1, 0x7f000001, 2130706433, 0177.0.0.1).
func isLocal(host string) bool {
	h := strings.TrimRight(strings.ToLower(host), ".")
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	if i := strings.IndexByte(h, '%'); i >= 0 {
		h = h[:i]
	}
	if ip := net.ParseIP(h); ip != nil {
		return ip.IsLoopback() || ip.IsUnspecified()
	}
	if ip, ok := inetAton(h); ok {
		return ip[0] == 127 || (ip[0]|ip[1]|ip[2]|ip[3]) == 0
	}
	return false
}

// inetAton parses IPv4 as BSD inet_aton does: one to four parts, each decimal, octal (0) or
// hexadecimal (0x); the last part fills the remaining bytes.
func inetAton(s string) ([4]byte, bool) {
	var ip [4]byte
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return ip, false
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		base := 10
		switch {
		case strings.HasPrefix(p, "0x"):
			p, base = p[2:], 16
		case len(p) > 1 && p[0] == '0':
			p, base = p[1:], 8
		}
		if p == "" && base != 16 {
			return ip, false
		}
		if p == "" {
			p = "0"
		}
		v, err := strconv.ParseUint(p, base, 32)
		if err != nil {
			return ip, false
		}
		vals[i] = v
	}
	last := len(vals) - 1
	for i := 0; i < last; i++ {
		if vals[i] > 255 {
			return ip, false
		}
		ip[i] = byte(vals[i])
	}
	rest := 4 - last
	if vals[last] >= 1<<(8*rest) {
		return ip, false
	}
	for i := 3; i >= last; i-- {
		ip[i] = byte(vals[last])
		vals[last] >>= 8
	}
	return ip, true
}
