package provisioning

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Every credential the catalog generates (a state key naming a password or a secret key) is
// drawn with sprig's randAlphaNum, which reads crypto/rand, and is long enough to carry at
// least 128 bits: log2(62) ≈ 5.95 bits a character, so 22 characters or more.
func TestCatalogCredentialsCarry128Bits(t *testing.T) {
	cfg := loadCatalog(t)
	line := regexp.MustCompile(`(?m)^\s*([A-Za-z]+):.*$`)
	draw := regexp.MustCompile(`randAlphaNum (\d+)`)
	credentials := 0
	for _, p := range cfg.Provisioners {
		for _, m := range line.FindAllStringSubmatch(p.State, -1) {
			key := strings.ToLower(m[1])
			if !strings.Contains(key, "password") && !strings.Contains(key, "secret") {
				continue
			}
			d := draw.FindStringSubmatch(m[0])
			if d == nil {
				t.Errorf("%s: %s is not drawn with randAlphaNum: %s", p.URI, m[1], strings.TrimSpace(m[0]))
				continue
			}
			n, _ := strconv.Atoi(d[1])
			if bits := float64(n) * math.Log2(62); bits < 128 {
				t.Errorf("%s: %s carries %.0f bits (randAlphaNum %d), want at least 128", p.URI, m[1], bits, n)
			}
			credentials++
		}
	}
	if credentials < 6 {
		t.Fatalf("found %d generated credentials in the catalog; the check reads nothing", credentials)
	}
}
