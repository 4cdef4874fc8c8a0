package orchconfig

import (
	"crypto/sha256"
	"encoding/hex"
)

// Revision names a config document by its content: "sha256:" and the hex digest of its bytes.
// The same document, from a ConfigMap or an OCI artifact, is the same revision.
func Revision(document []byte) string {
	sum := sha256.Sum256(document)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ShortRevision is a revision as people read it: "sha256:" and the digest's first 12 digits.
func ShortRevision(revision string) string {
	if n := len("sha256:") + 12; len(revision) > n {
		return revision[:n]
	}
	return revision
}
