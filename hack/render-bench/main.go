// Command render-bench times the offline render of a whole app against score-k8s side by side,
// in one sitting: it writes N Score files (a mix of a postgres, a redis, a dns with a route, and
// no dependency), renders them in one invocation of `scorectl render` (the sample config and the
// development catalog) and of `score-k8s generate` (after an untimed `init --no-sample` in a
// fresh directory), alternating the two for each run, and times each binary starting
// (`--help`). It prints medians and the ratios; on a shared machine, only the ratios mean much.
//
//	go run ./hack/render-bench --score-k8s bin/score-k8s [--scorectl bin/scorectl] [--n 100] [--runs 15]
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
)

func main() {
	scoreK8s := flag.String("score-k8s", "", "the score-k8s binary (hack/tools.sh score-k8s builds it from a checkout)")
	scorectl := flag.String("scorectl", "bin/scorectl", "the scorectl binary")
	n := flag.Int("n", 100, "Score files in the app")
	runs := flag.Int("runs", 15, "timed runs of each")
	flag.Parse()
	if *scoreK8s == "" {
		fmt.Fprintln(os.Stderr, "render-bench: --score-k8s is required")
		os.Exit(2)
	}
	if err := run(*scorectl, *scoreK8s, *n, *runs); err != nil {
		fmt.Fprintln(os.Stderr, "render-bench:", err)
		os.Exit(1)
	}
}

func run(scorectl, scoreK8s string, n, runs int) error {
	var err error
	if scorectl, err = filepath.Abs(scorectl); err != nil {
		return err
	}
	if scoreK8s, err = filepath.Abs(scoreK8s); err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "render-bench-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(work) }()
	app := filepath.Join(work, "app")
	files, err := writeApp(app, n)
	if err != nil {
		return err
	}
	doc, err := orchconfig.DevelopmentConfig(os.DirFS("."))
	if err != nil {
		return err
	}
	config := filepath.Join(work, "orchestrator-config.yaml")
	if err := os.WriteFile(config, doc, 0o644); err != nil {
		return err
	}
	templates, err := filepath.Abs(filepath.Join("config", "templates"))
	if err != nil {
		return err
	}

	ours := []string{scorectl, "render", "-f", app, "--config", config, "--templates", templates}
	var renderOurs, renderTheirs, startOurs, startTheirs []time.Duration
	for i := 0; i < runs; i++ {
		d, err := timed("", ours...)
		if err != nil {
			return err
		}
		renderOurs = append(renderOurs, d)

		dir := filepath.Join(work, fmt.Sprintf("score-k8s-%d", i))
		if err := os.Mkdir(dir, 0o755); err != nil {
			return err
		}
		if _, err := timed(dir, scoreK8s, "init", "--no-sample"); err != nil {
			return err
		}
		if d, err = timed(dir, append([]string{scoreK8s, "generate"}, files...)...); err != nil {
			return err
		}
		renderTheirs = append(renderTheirs, d)

		for j := 0; j < 5; j++ {
			if d, err = timed("", scorectl, "--help"); err != nil {
				return err
			}
			startOurs = append(startOurs, d)
			if d, err = timed("", scoreK8s, "--help"); err != nil {
				return err
			}
			startTheirs = append(startTheirs, d)
		}
	}
	ro, rt, so, st := median(renderOurs), median(renderTheirs), median(startOurs), median(startTheirs)
	fmt.Printf("render %d Score files   scorectl %6.1f ms   score-k8s %6.1f ms   score-k8s/scorectl %.2f×\n", n, ms(ro), ms(rt), float64(rt)/float64(ro))
	fmt.Printf("start (--help)          scorectl %6.1f ms   score-k8s %6.1f ms\n", ms(so), ms(st))
	fmt.Printf("medians of %d runs (start: %d); the two alternate, so both see the same machine\n", runs, len(startOurs))
	return nil
}

// writeApp writes n Score files into dir and returns their paths.
func writeApp(dir string, n int) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var files []string
	for i := 1; i <= n; i++ {
		var extra string
		switch i % 4 {
		case 0:
			extra = "    variables: {DB_HOST: \"${resources.db.host}\", DB_PASSWORD: \"${resources.db.password}\"}\nservice: {ports: {web: {port: 80, targetPort: 8080}}}\nresources: {db: {type: postgres}}\n"
		case 1:
			extra = "    variables: {REDIS: \"${resources.cache.host}:${resources.cache.port}\"}\nservice: {ports: {web: {port: 80, targetPort: 8080}}}\nresources: {cache: {type: redis}}\n"
		case 2:
			extra = "    variables: {GREETING: \"hello ${metadata.name}\"}\nservice: {ports: {web: {port: 80, targetPort: 8080}}}\n"
		case 3:
			extra = "service: {ports: {web: {port: 80, targetPort: 8080}}}\nresources: {dns: {type: dns}, route: {type: route, params: {host: \"${resources.dns.host}\", path: /, port: 80}}}\n"
		}
		doc := fmt.Sprintf("apiVersion: score.dev/v1b1\nmetadata: {name: app%d}\ncontainers:\n  main:\n    image: ghcr.io/example/app%d:1.0\n%s", i, i, extra)
		f := filepath.Join(dir, fmt.Sprintf("app%d.yaml", i))
		if err := os.WriteFile(f, []byte(doc), 0o644); err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

// timed runs the command in dir and returns how long it took; a failure carries its output.
func timed(dir string, args ...string) (time.Duration, error) {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stderr = &out
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("%s: %w: %s", filepath.Base(args[0]), err, out.String())
	}
	return d, nil
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
