package claimdecision

import (
	"fmt"
	"strings"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
)

// InstanceNamespace decides where a claim's instance lives, from the labels of the claim's
// namespace. A claim with an id whose provisioner shares across namespaces, from a namespace
// the sharing selector admits and with an id it shares (all, unless it lists some), shares the
// instance in the sharing namespace (returned); any other gets its own instance ("": its own
// namespace) or, when the platform says Deny, a denial message. Without an id, or without sharing, the instance is the claim's
// own.
func InstanceNamespace(c *scorev1b1.ResourceClaim, sh *orchconfig.Sharing, labels map[string]string) (namespace, denied string) {
	switch {
	case c.Spec.ID == "" || sh == nil:
		return "", ""
	case c.Namespace == sh.Namespace:
		return "", "" // the sharing namespace's own claims share in place
	case sh.NamespaceSelector.MatchesLabels(labels) && sh.SharesID(c.Spec.ID):
		return sh.Namespace, ""
	case sh.Otherwise == orchconfig.SharingDeny && !sh.SharesID(c.Spec.ID):
		return "", fmt.Sprintf("Namespace %s may not share %s %s: the platform shares only the ids %s.", c.Namespace, c.Spec.Type, c.Spec.ID, strings.Join(sh.IDs, ", "))
	case sh.Otherwise == orchconfig.SharingDeny:
		return "", fmt.Sprintf("Namespace %s may not share %s %s: the platform shares it only with namespaces it selects by label.", c.Namespace, c.Spec.Type, c.Spec.ID)
	}
	return "", ""
}

// HostnameDenied says why a claim may not have a host name that a param its definition marks
// (hostnameParams) holds, "" when it may: the config's hostnames rules for its namespace,
// whose labels are given. The decision is made on the claim's namespace, not on anything the
// Workload says.
func HostnameDenied(c *scorev1b1.ResourceClaim, def orchconfig.Provisioner, params map[string]any, cfg *orchconfig.Config, labels map[string]string) string {
	if len(cfg.Hostnames) == 0 {
		return ""
	}
	for _, param := range def.HostnameParams {
		v, ok := params[param]
		if !ok {
			continue
		}
		hosts, isList := v.([]any)
		if !isList {
			hosts = []any{v}
		}
		for _, h := range hosts {
			host := fmt.Sprint(h)
			if ok, domains := cfg.HostnameAllowed(c.Namespace, labels, host); !ok {
				admitted := "no host name"
				if len(domains) > 0 {
					admitted = strings.Join(domains, ", ")
				}
				return fmt.Sprintf("Namespace %s may not use host name %s: the platform admits %s there.", c.Namespace, host, admitted)
			}
		}
	}
	return ""
}

// ForeignSecret is a Secret of a claim's outputs Secret name that the claim does not control:
// the claim's secret outputs are not written into it, and the claim fails until it is removed
// or renamed.
type ForeignSecret struct {
	Name string
	// Controller is the Secret's controller ("<Kind> <name>"), "" when it has none.
	Controller string
}

func (e *ForeignSecret) Error() string {
	return fmt.Sprintf("secret %s exists and was not created for this claim (%s)", e.Name, e.held())
}

// Message is the claim's status message.
func (e *ForeignSecret) Message() string {
	return fmt.Sprintf("Secret %s exists and was not created for this claim (%s); it is left as it is and the claim's secret outputs are not written into it: remove or rename it.", e.Name, e.held())
}

func (e *ForeignSecret) held() string {
	if e.Controller == "" {
		return "it has no controller"
	}
	return "it is controlled by " + e.Controller
}
