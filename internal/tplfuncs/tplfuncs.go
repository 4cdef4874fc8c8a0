// Package tplfuncs holds the template function sets. Provisioner templates get sprig plus
// score-k8s's encodeSecretRef, exactly as score-k8s offers them, so its provisioner files run
// unchanged.
package tplfuncs

import (
	"fmt"
	"text/template"

	"github.com/Masterminds/sprig/v3"
)

// SecretRefPrefix and SecretRefSuffix enclose a score-k8s secret reference
// "🔐💬<secret>_<key>💬🔐" in a provisioner output.
const (
	SecretRefPrefix = "🔐💬"
	SecretRefSuffix = "💬🔐"
)

// EncodeSecretRef returns the score-k8s encoding of a reference to key in Secret secret.
func EncodeSecretRef(secret, key string) string {
	return fmt.Sprintf("%s%s_%s%s", SecretRefPrefix, secret, key, SecretRefSuffix)
}

// Provisioner returns the function set of provisioner templates: sprig's text functions and
// encodeSecretRef.
func Provisioner() template.FuncMap {
	fm := sprig.TxtFuncMap()
	fm["encodeSecretRef"] = EncodeSecretRef
	return fm
}
