// Command testserver is the program the runtime conformance tests run in their containers:
// a static binary, imported as an image from a file. It serves on $PORT (8080): /env/NAME
// answers a variable's value, /file/PATH a file's content, /ready 200 once it serves. With
// $EXIT_CODE it exits at once with that code. "testserver healthcheck" asks its own /ready and
// exits 0 when it answers: a Docker healthcheck for an image without a shell.
package main

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
)

func main() {
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	if len(os.Args) > 1 && os.Args[1] == "healthcheck" {
		resp, err := http.Get("http://127.0.0.1:" + port + "/ready")
		if err != nil || resp.StatusCode != http.StatusOK {
			os.Exit(1)
		}
		os.Exit(0)
	}
	if code := os.Getenv("EXIT_CODE"); code != "" {
		n, _ := strconv.Atoi(code)
		fmt.Fprintln(os.Stderr, "exiting with", n)
		os.Exit(n)
	}
	http.HandleFunc("/env/", func(w http.ResponseWriter, r *http.Request) {
		v, ok := os.LookupEnv(strings.TrimPrefix(r.URL.Path, "/env/"))
		if !ok {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, v)
	})
	http.HandleFunc("/file/", func(w http.ResponseWriter, r *http.Request) {
		b, err := os.ReadFile(strings.TrimPrefix(r.URL.Path, "/file"))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		w.Write(b)
	})
	http.HandleFunc("/ready", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })
	if err := http.ListenAndServe(":"+port, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
