// Command orders-api stands in, on make dev-docker's Docker host, for the image the example
// web-postgres-redis names (ghcr.io/example/orders-api, which is not published): it serves on
// :8080 and answers / and /healthz with whether the database and the cache its variables name
// answer, by a TCP connection to each (200 when both do, 503 when one does not). It never
// prints a password.
package main

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

func main() {
	deps := map[string]string{"postgres": databaseAddress(os.Getenv("DATABASE_URL")), "redis": net.JoinHostPort(os.Getenv("REDIS_HOST"), os.Getenv("REDIS_PORT"))}
	report := func(w http.ResponseWriter, _ *http.Request) {
		var lines []string
		status := http.StatusOK
		for _, name := range []string{"postgres", "redis"} {
			addr := deps[name]
			conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
			if err != nil {
				status = http.StatusServiceUnavailable
				lines = append(lines, fmt.Sprintf("%s at %s: no answer", name, addr))
				continue
			}
			_ = conn.Close()
			lines = append(lines, fmt.Sprintf("%s at %s: answers", name, addr))
		}
		w.WriteHeader(status)
		fmt.Fprintln(w, strings.Join(lines, "\n"))
	}
	http.HandleFunc("/", report)
	http.HandleFunc("/healthz", report)
	if err := http.ListenAndServe(":8080", nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// databaseAddress is the host and port of a postgres:// URL, without its credentials.
func databaseAddress(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "an unreadable DATABASE_URL"
	}
	return u.Host
}
