// Package statesign signs a provisioner's state Secret: an HMAC-SHA256 of the Secret's
// namespace, name and state under the key the provisioner keeps in the control plane's
// namespace. The provisioner signs what it writes and reads only what verifies; the platform
// re-signs a state it changed by hand with `scorectl state sign`, which reads the same key.
// Pure: no client, no clock.
package statesign

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
)

// KeySecret is the Secret, in the control plane's namespace, whose "key" signs state.
const KeySecret = "score-provisioner-state-key"

// KeyBytes is the length of a key the provisioner draws, and the shortest it accepts.
const KeyBytes = 32

// KeyData is the key Secret's data key holding the key.
const KeyData = "key"

// KeyOf returns the key a key Secret's data holds, or why it is not one: absent or shorter than
// KeyBytes.
func KeyOf(data map[string][]byte) ([]byte, error) {
	if len(data[KeyData]) < KeyBytes {
		return nil, fmt.Errorf("the state's signing key %s holds fewer than %d bytes", KeySecret, KeyBytes)
	}
	return data[KeyData], nil
}

// Annotation holds a state Secret's signature.
const Annotation = "score.dev/state-mac"

// StateKey is the Secret's data key holding the state.
const StateKey = "state.json"

// Sign is the signature of state kept in the Secret namespace/name under key.
func Sign(key []byte, namespace, name string, state []byte) string {
	h := hmac.New(sha256.New, key)
	for _, part := range [][]byte{[]byte("score.dev/state/v1"), []byte(namespace), []byte(name), state} {
		h.Write(part)
		h.Write([]byte{0})
	}
	return base64.RawStdEncoding.EncodeToString(h.Sum(nil))
}

// Verify reports whether signature is state's in namespace/name under key.
func Verify(key []byte, namespace, name string, state []byte, signature string) bool {
	return hmac.Equal([]byte(signature), []byte(Sign(key, namespace, name, state)))
}
