// Package mirror holds the endpoint mirror rules: how a runtime-published WorkloadExposure
// becomes the Workload's endpoint and an abstract runtime signal. The orchestrator calls it
// as a stage of its one status computation, so the Workload's status keeps a single writer.
// It is pure.
package mirror

import (
	"bytes"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"text/template"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
)

// Policy is the platform's endpoint policy.
type Policy struct {
	// PublicOnly hides endpoints whose scope is not Public.
	PublicOnly bool
	// EndpointTemplate, when set, replaces the runtime-published URL once the runtime has
	// published a valid one; a Go template over .workload.name and .workload.namespace.
	EndpointTemplate string
}

// Input is what the mirror looks at.
type Input struct {
	// Exposure is the Workload's WorkloadExposure, or nil.
	Exposure *scorev1b1.WorkloadExposure
	// WorkloadName, Namespace, UID and Generation identify the Workload being reconciled.
	WorkloadName, Namespace, WorkloadUID string
	WorkloadGeneration                   int64
	// Previous is the Workload's current endpoint.
	Previous *string
	Policy   Policy
}

// Result is the mirrored endpoint and what the runtime says about the workload.
type Result struct {
	Endpoint *string
	// Rejected explains why exposures[0] was not mirrored (invalid URL); the previous
	// endpoint is kept.
	Rejected string
	// Ignored explains why the exposure was not looked at (stale generation, another UID).
	Ignored string
	// Signal is the runtime's normalised condition, or nil when it published none.
	Signal *Signal
}

// Signal is a runtime condition normalised to the abstract vocabulary.
type Signal struct {
	Status metav1.ConditionStatus
	Reason scorev1b1.Reason
}

// Mirror applies the rules of the endpoint mirror: exposures[0].url only after URI
// validation; a stale generation or another Workload's UID is ignored; an invalid URL keeps
// the previous value; non-Public scopes hidden when the policy says so; the template
// override replaces the URL.
func Mirror(in Input) Result {
	e := in.Exposure
	if e == nil {
		return Result{}
	}
	if e.Spec.WorkloadRef.UID != in.WorkloadUID {
		return Result{Endpoint: in.Previous, Ignored: "the exposure belongs to another incarnation of the workload"}
	}
	if e.Status.ObservedWorkloadGeneration < in.WorkloadGeneration {
		return Result{Endpoint: in.Previous, Ignored: fmt.Sprintf("the exposure reflects generation %d, the workload is at %d", e.Status.ObservedWorkloadGeneration, in.WorkloadGeneration)}
	}
	r := Result{Signal: Normalize(e.Status.Conditions)}
	if len(e.Status.Exposures) == 0 {
		return r
	}
	first := e.Status.Exposures[0]
	// A Docker host's endpoint is the address the platform gave its agent and a port the
	// Engine chose, nothing a Workload wrote: it may be the host's loopback address (a
	// developer's machine). Every other runtime's URL carries names a Workload chose.
	if err := validateURL(first.URL, e.Spec.RuntimeClass == scorev1b1.RuntimeClassDocker); err != nil {
		r.Endpoint, r.Rejected = in.Previous, err.Error()
		return r
	}
	if in.Policy.PublicOnly && first.Scope != scorev1b1.ScopePublic {
		return r
	}
	endpoint := first.URL
	if in.Policy.EndpointTemplate != "" {
		rendered, err := renderTemplate(in.Policy.EndpointTemplate, in.WorkloadName, in.Namespace)
		if err != nil {
			r.Endpoint, r.Rejected = in.Previous, err.Error()
			return r
		}
		endpoint = rendered
	}
	r.Endpoint = &endpoint
	return r
}

// ValidateURL accepts an absolute URI with a scheme and a host, without credentials, that
// does not point at the loopback interface.
func ValidateURL(raw string) error { return validateURL(raw, false) }

// validateURL is ValidateURL, which accepts local addresses when allowLocal says so.
func validateURL(raw string, allowLocal bool) error {
	if raw == "" || strings.TrimSpace(raw) != raw || strings.ContainsAny(raw, " \t\n") {
		return fmt.Errorf("the URL %q is empty or contains white space", raw)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("the URL %q does not parse: %w", raw, err)
	}
	if u.Scheme == "" || u.Host == "" || u.Hostname() == "" {
		return fmt.Errorf("the URL %q needs a scheme and a host", raw)
	}
	if u.User != nil {
		return fmt.Errorf("the URL %q carries credentials", redact(u))
	}
	if allowLocal {
		return nil
	}
	switch localHost(u.Hostname()) {
	case localName:
		return fmt.Errorf("the URL %q points at localhost", raw)
	case localAddress:
		return fmt.Errorf("the URL %q points at the loopback interface", raw)
	case unspecifiedAddress:
		return fmt.Errorf("the URL %q points at the unspecified address, which reaches the local machine", raw)
	}
	return nil
}

type hostKind int

const (
	remoteHost hostKind = iota
	localName
	localAddress
	unspecifiedAddress
)

// localHost says whether a URL's host leads to the machine that opens it, however it is
// spelled: localhost in any case, with a trailing dot or as a parent domain; a loopback or
// unspecified (0.0.0.0, ::) address, with or without an IPv6 zone; and the shorthand IPv4
// forms that resolvers accept as addresses (127.1, 0x7f000001, 2130706433, 0177.0.0.1).
func localHost(host string) hostKind {
	h := strings.TrimRight(strings.ToLower(host), ".")
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return localName
	}
	h, _, _ = strings.Cut(h, "%")
	ip := net.ParseIP(h)
	if ip == nil {
		ip = shorthandIPv4(h)
	}
	switch {
	case ip == nil:
	case ip.IsLoopback():
		return localAddress
	case ip.IsUnspecified():
		return unspecifiedAddress
	}
	return remoteHost
}

// shorthandIPv4 reads the IPv4 forms of BSD inet_aton: one to four numbers, each decimal,
// octal (leading 0) or hexadecimal (0x), the last filling the remaining bytes. It returns nil
// for anything else.
func shorthandIPv4(s string) net.IP {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return nil
	}
	var addr uint64
	for i, p := range parts {
		digits, base := p, 10
		switch {
		case p == "0x": // inet_aton reads a bare 0x as 0
			digits = "0"
		case strings.HasPrefix(p, "0x"):
			digits, base = p[2:], 16
		case len(p) > 1 && p[0] == '0':
			digits, base = p[1:], 8
		}
		n, err := strconv.ParseUint(digits, base, 32) // not base 0, which takes 0b, 0o and _
		if err != nil {
			return nil
		}
		width := 8 // bits this part fills: 8, or the rest of the address for the last part
		if i == len(parts)-1 {
			width = 8 * (4 - i)
		}
		if n >= 1<<width {
			return nil
		}
		addr = addr<<width | n
	}
	return net.IPv4(byte(addr>>24), byte(addr>>16), byte(addr>>8), byte(addr))
}

func redact(u *url.URL) string {
	c := *u
	c.User = url.User("redacted")
	return c.String()
}

func renderTemplate(text, name, namespace string) (string, error) {
	t, err := template.New("endpoint").Option("missingkey=error").Parse(text)
	if err != nil {
		return "", fmt.Errorf("the endpoint template does not parse: %w", err)
	}
	var b bytes.Buffer
	data := map[string]any{"workload": map[string]any{"name": name, "namespace": namespace}}
	if err := t.Execute(&b, data); err != nil {
		return "", fmt.Errorf("the endpoint template fails: %w", err)
	}
	if err := ValidateURL(b.String()); err != nil {
		return "", fmt.Errorf("the endpoint template gives an invalid URL: %w", err)
	}
	return b.String(), nil
}

// The condition normalisation map of endpoint-mirror.md. A runtime condition of one of these
// types with status True carries the signal; the most severe wins.
var normalization = []struct {
	types  []string
	signal Signal
}{
	{[]string{"PolicyViolation"}, Signal{metav1.ConditionFalse, scorev1b1.ReasonPolicyViolation}},
	{[]string{"QuotaExceeded"}, Signal{metav1.ConditionFalse, scorev1b1.ReasonQuotaExceeded}},
	{[]string{"PermissionDenied"}, Signal{metav1.ConditionFalse, scorev1b1.ReasonPermissionDenied}},
	{[]string{scorev1b1.ExposureConditionLBPending, scorev1b1.ExposureConditionIngressPending, scorev1b1.ExposureConditionDNSNotReady}, Signal{metav1.ConditionFalse, scorev1b1.ReasonNetworkUnavailable}},
	{[]string{scorev1b1.ExposureConditionSelecting, scorev1b1.ExposureConditionProvisioning, scorev1b1.ExposureConditionApplying}, Signal{metav1.ConditionUnknown, scorev1b1.ReasonRuntimeProvisioning}},
	{[]string{scorev1b1.ExposureConditionDegraded}, Signal{metav1.ConditionTrue, scorev1b1.ReasonRuntimeDegraded}},
	{[]string{scorev1b1.ExposureConditionHealthy, scorev1b1.ExposureConditionAvailable}, Signal{metav1.ConditionTrue, scorev1b1.ReasonSucceeded}},
}

// Normalize maps runtime conditions to one abstract signal, or nil when none is recognised.
func Normalize(conditions []metav1.Condition) *Signal {
	active := map[string]bool{}
	for _, c := range conditions {
		if c.Status == metav1.ConditionTrue {
			active[c.Type] = true
		}
	}
	for _, n := range normalization {
		for _, t := range n.types {
			if active[t] {
				s := n.signal
				return &s
			}
		}
	}
	return nil
}
