package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/cli/scorefile"
)

// readWorkloads converts the Score files paths name, in order, as Workloads of generation 1 in
// namespace (default "default"): every document of a file, and every *.yaml or *.yml file
// below a directory, in path order. image, when set, replaces every image ".". Two Workloads
// of one name in one namespace are an error: the second would silently replace the first.
func readWorkloads(paths []string, namespace, image string) ([]*scorev1b1.Workload, error) {
	if namespace == "" {
		namespace = "default"
	}
	var out []*scorev1b1.Workload
	from := map[string]string{}
	for _, p := range paths {
		files, err := scoreFiles(p)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			results, err := scorefile.ReadFile(f, scorefile.Options{Namespace: namespace, Image: image})
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			for _, r := range results {
				w := r.Workload
				key := w.Namespace + "/" + w.Name
				if first, ok := from[key]; ok {
					return nil, fmt.Errorf("%s: workload %s is also in %s; names must be unique in a namespace", f, w.Name, first)
				}
				from[key] = f
				w.Generation = 1
				out = append(out, w)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no Score file in %s", strings.Join(paths, ", "))
	}
	return out, nil
}

// scoreFiles is path itself, or the *.yaml and *.yml files below the directory path, hidden
// files and directories (.score-k8s, .git) left out.
func scoreFiles(path string) ([]string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return []string{path}, nil
	}
	var files []string
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != path && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			files = append(files, p)
		}
		return nil
	})
	sort.Strings(files)
	return files, err
}
