package compose

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// MountsDirectory is what a definition in score-compose's format sees as .MountsDirectory:
// not a directory of the host (a host's files are not a tenant's), the root of the
// fragment's files, which a service's bind mount names and the Docker runtime copies in.
const MountsDirectory = "/score-compose-mounts"

// Fragment is what a provisioner definition in score-compose's format asks the Docker host
// of its claim's namespace to run: the services, volumes and files its templates rendered,
// checked and normalised (ParseFragment). The Docker runtime runs the union of a namespace's
// fragments, each service on the namespace's network under its name.
type Fragment struct {
	Services map[string]Service `json:"services,omitempty"`
	// Volumes are named volumes of the namespace, by name.
	Volumes map[string]Volume `json:"volumes,omitempty"`
	// Files are the files under the mounts directory, by path relative to it.
	Files map[string]string `json:"files,omitempty"`
}

// Service is one Compose service, in the part of Compose the Docker runtime runs.
type Service struct {
	Image       string            `json:"image"`
	Entrypoint  []string          `json:"entrypoint,omitempty"`
	Command     []string          `json:"command,omitempty"`
	Environment map[string]string `json:"environment,omitempty"`
	// Ports are container ports published on the host's address, on a port the host picks.
	Ports       []int             `json:"ports,omitempty"`
	Mounts      []Mount           `json:"mounts,omitempty"`
	Healthcheck *Healthcheck      `json:"healthcheck,omitempty"`
	DependsOn   map[string]string `json:"dependsOn,omitempty"`
	// Restart is no, always, unless-stopped or on-failure.
	Restart    string            `json:"restart,omitempty"`
	User       string            `json:"user,omitempty"`
	WorkingDir string            `json:"workingDir,omitempty"`
	Labels     map[string]string `json:"labels,omitempty"`
}

// Mount is a named volume of the namespace, or files of the mounts directory (a file, or a
// directory's files), at Target.
type Mount struct {
	Volume   string `json:"volume,omitempty"`
	Files    string `json:"files,omitempty"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"readOnly,omitempty"`
}

// Healthcheck is a Docker healthcheck: Test is CMD's argv, or CMD-SHELL's one command.
type Healthcheck struct {
	Test        []string      `json:"test"`
	Interval    time.Duration `json:"interval,omitempty"`
	Timeout     time.Duration `json:"timeout,omitempty"`
	StartPeriod time.Duration `json:"startPeriod,omitempty"`
	Retries     int           `json:"retries,omitempty"`
}

// Volume is a named volume: local, made by the host.
type Volume struct {
	Labels map[string]string `json:"labels,omitempty"`
}

// The depends_on conditions.
const (
	ServiceStarted               = "service_started"
	ServiceHealthy               = "service_healthy"
	ServiceCompletedSuccessfully = "service_completed_successfully"
)

// ServiceKeys are the keys of a Compose service the Docker runtime runs; any other is
// refused, by name, rather than dropped (privileged, network_mode, cap_add, a host's
// devices...: a tenant's values reach these templates).
var ServiceKeys = []string{"image", "entrypoint", "command", "environment", "ports", "volumes", "healthcheck", "depends_on", "restart", "user", "working_dir", "labels"}

var namePattern = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$`)

// ParseFragment reads and normalises what a definition's services, volumes and files
// templates rendered, and checks the result (Check). Compose's interpolation is applied to the services and volumes: $$ is
// a $; any other $ would read the Compose CLI's environment, which a host's agent does not
// lend, and is refused.
func ParseFragment(services, volumes, files map[string]any) (Fragment, error) {
	f := Fragment{Services: map[string]Service{}, Volumes: map[string]Volume{}, Files: map[string]string{}}
	for path, v := range files {
		clean, err := relativeFile(path)
		if err != nil {
			return Fragment{}, fmt.Errorf("files: %w", err)
		}
		s, ok := v.(string)
		if !ok {
			return Fragment{}, fmt.Errorf("files: %s: the content must be text", path)
		}
		f.Files[clean] = s
	}
	for name, v := range volumes {
		vol, err := parseVolume(v)
		if err != nil {
			return Fragment{}, fmt.Errorf("volumes: %s: %w", name, err)
		}
		f.Volumes[name] = vol
	}
	for name, v := range services {
		m, ok := v.(map[string]any)
		if !ok {
			return Fragment{}, fmt.Errorf("services: %s: must be a mapping", name)
		}
		s, err := parseService(m, f)
		if err != nil {
			return Fragment{}, fmt.Errorf("services: %s: %w", name, err)
		}
		f.Services[name] = s
	}
	if err := f.Check(); err != nil {
		return Fragment{}, err
	}
	return f, nil
}

// Check verifies what ParseFragment guarantees of a fragment, for one read back from where it
// was stored: names of services and volumes, files under the mounts directory, mounts of what
// the fragment declares, the dependencies it runs with known conditions, ports, restart
// policies, and no label of the runtime's own (score.dev/).
func (f Fragment) Check() error {
	for path := range f.Files {
		if clean, err := relativeFile(path); err != nil || clean != path {
			return fmt.Errorf("files: %q is not a path under the mounts directory", path)
		}
	}
	for name := range f.Volumes {
		if !namePattern.MatchString(name) {
			return fmt.Errorf("volumes: %q is not a volume name (letters, digits, _ . -)", name)
		}
	}
	for name, s := range f.Services {
		if err := f.checkService(name, s); err != nil {
			return fmt.Errorf("services: %s: %w", name, err)
		}
	}
	return nil
}

func (f Fragment) checkService(name string, s Service) error {
	if !namePattern.MatchString(name) {
		return errors.New("not a service name (letters, digits, _ . -)")
	}
	if s.Image == "" {
		return errors.New("no image")
	}
	for dep, condition := range s.DependsOn {
		if _, ok := f.Services[dep]; !ok {
			return fmt.Errorf("depends on %s, which the definition does not run", dep)
		}
		switch condition {
		case ServiceStarted, ServiceHealthy, ServiceCompletedSuccessfully:
		default:
			return fmt.Errorf("depends_on: %s: condition %q", dep, condition)
		}
	}
	for _, m := range s.Mounts {
		switch {
		case !strings.HasPrefix(m.Target, "/"):
			return fmt.Errorf("volumes: target %q must be an absolute path", m.Target)
		case m.Volume != "" && m.Files != "":
			return errors.New("volumes: a mount is a volume or files, not both")
		case m.Volume != "":
			if _, ok := f.Volumes[m.Volume]; !ok {
				return fmt.Errorf("volumes: volume %q is not one the definition declares", m.Volume)
			}
		default:
			if clean, err := relativeFile(m.Files); err != nil || clean != m.Files {
				return fmt.Errorf("volumes: %q is not a path under the mounts directory", m.Files)
			}
		}
	}
	for _, port := range s.Ports {
		if port < 1 || port > 65535 {
			return fmt.Errorf("ports: %d is not a port", port)
		}
	}
	switch policy, _, _ := strings.Cut(s.Restart, ":"); policy {
	case "", "no", "always", "unless-stopped", "on-failure":
	default:
		return fmt.Errorf("restart: %q must be no, always, unless-stopped or on-failure", s.Restart)
	}
	for k := range s.Labels {
		if strings.HasPrefix(k, "score.dev/") {
			return fmt.Errorf("labels: %s is the runtime's own", k)
		}
	}
	return nil
}

// Merge adds other's services, volumes and files to f; a name both hold with another
// definition keeps f's, and is reported.
func (f *Fragment) Merge(other Fragment) error {
	var errs []error
	for name, s := range other.Services {
		if have, ok := f.Services[name]; ok && !sameService(have, s) {
			errs = append(errs, fmt.Errorf("service %s is defined twice, differently", name))
			continue
		}
		f.Services[name] = s
	}
	for name, v := range other.Volumes {
		if _, ok := f.Volumes[name]; !ok {
			f.Volumes[name] = v
		}
	}
	for path, content := range other.Files {
		if have, ok := f.Files[path]; ok && have != content {
			errs = append(errs, fmt.Errorf("file %s is written twice, differently", path))
			continue
		}
		f.Files[path] = content
	}
	return errors.Join(errs...)
}

// FilesOf are the files a mount of the mounts directory copies in, by their target path.
func (f Fragment) FilesOf(m Mount) map[string]string {
	out := map[string]string{}
	if m.Files == "" {
		return out
	}
	for path, content := range f.Files {
		switch {
		case path == m.Files:
			out[m.Target] = content
		case strings.HasPrefix(path, m.Files+"/"):
			out[m.Target+"/"+strings.TrimPrefix(path, m.Files+"/")] = content
		}
	}
	return out
}

// Order is the services in the order they start: each after those it depends on, by name
// otherwise. A cycle is an error.
func (f Fragment) Order() ([]string, error) {
	names := make([]string, 0, len(f.Services))
	for name := range f.Services {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []string
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(string) error
	visit = func(name string) error {
		switch state[name] {
		case 1:
			return fmt.Errorf("services %s: depends_on makes a cycle", name)
		case 2:
			return nil
		}
		state[name] = 1
		deps := make([]string, 0, len(f.Services[name].DependsOn))
		for dep := range f.Services[name].DependsOn {
			deps = append(deps, dep)
		}
		sort.Strings(deps)
		for _, dep := range deps {
			if err := visit(dep); err != nil {
				return err
			}
		}
		state[name] = 2
		out = append(out, name)
		return nil
	}
	for _, name := range names {
		if err := visit(name); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func sameService(a, b Service) bool {
	return reflect.DeepEqual(a, b)
}

func parseVolume(v any) (Volume, error) {
	if v == nil {
		return Volume{}, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return Volume{}, errors.New("must be a mapping")
	}
	var vol Volume
	for k, x := range m {
		switch k {
		case "name":
			// A Compose volume's global name: the runtime names it within the namespace.
		case "driver":
			if x != "local" {
				return Volume{}, fmt.Errorf("driver %v: the Docker runtime makes local volumes only", x)
			}
		case "labels":
			labels, err := stringMap(x)
			if err != nil {
				return Volume{}, fmt.Errorf("labels: %w", err)
			}
			vol.Labels = labels
		default:
			return Volume{}, fmt.Errorf("%s is not run by the Docker runtime (it makes named local volumes)", k)
		}
	}
	return vol, nil
}

func parseService(m map[string]any, f Fragment) (Service, error) {
	var s Service
	for k := range m {
		if !slices.Contains(ServiceKeys, k) {
			return s, fmt.Errorf("%s is not run by the Docker runtime (it runs %s)", k, strings.Join(ServiceKeys, ", "))
		}
	}
	var err error
	str := func(key string) (string, error) {
		v, ok := m[key]
		if !ok || v == nil {
			return "", nil
		}
		return interpolate(scalar(v))
	}
	if s.Image, err = str("image"); err != nil {
		return s, fmt.Errorf("image: %w", err)
	}
	if s.Entrypoint, err = command(m["entrypoint"]); err != nil {
		return s, fmt.Errorf("entrypoint: %w", err)
	}
	if s.Command, err = command(m["command"]); err != nil {
		return s, fmt.Errorf("command: %w", err)
	}
	if s.Environment, err = environment(m["environment"]); err != nil {
		return s, fmt.Errorf("environment: %w", err)
	}
	if s.Ports, err = servicePorts(m["ports"]); err != nil {
		return s, fmt.Errorf("ports: %w", err)
	}
	if s.Mounts, err = mounts(m["volumes"], f); err != nil {
		return s, fmt.Errorf("volumes: %w", err)
	}
	if s.Healthcheck, err = healthcheck(m["healthcheck"]); err != nil {
		return s, fmt.Errorf("healthcheck: %w", err)
	}
	if s.DependsOn, err = dependsOn(m["depends_on"]); err != nil {
		return s, fmt.Errorf("depends_on: %w", err)
	}
	if s.Restart, err = str("restart"); err != nil {
		return s, err
	}
	if s.User, err = str("user"); err != nil {
		return s, fmt.Errorf("user: %w", err)
	}
	if s.WorkingDir, err = str("working_dir"); err != nil {
		return s, fmt.Errorf("working_dir: %w", err)
	}
	if s.Labels, err = stringMap(m["labels"]); err != nil {
		return s, fmt.Errorf("labels: %w", err)
	}
	return s, nil
}

// interpolate applies Compose's interpolation: $$ is $, and nothing is read from an
// environment.
func interpolate(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '$' {
			b.WriteByte('$')
			i++
			continue
		}
		if i+1 < len(s) && (s[i+1] == '{' || s[i+1] == '_' || isLetter(s[i+1])) {
			// The value is not quoted: it may hold a password.
			return "", errors.New("a value reads a variable of the Compose CLI's environment, which the Docker runtime does not have: write $$ for a $")
		}
		b.WriteByte('$')
	}
	return b.String(), nil
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// scalar is a YAML scalar as Compose reads it: text.
func scalar(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

// command is a list of words, or one string split as a shell would split its words
// (Compose's short syntax).
func command(v any) ([]string, error) {
	var words []string
	switch x := v.(type) {
	case nil:
		return nil, nil
	case string:
		split, err := splitWords(x)
		if err != nil {
			return nil, err
		}
		words = split
	case []any:
		for _, w := range x {
			words = append(words, scalar(w))
		}
	default:
		return nil, errors.New("must be a string or a list")
	}
	for i, w := range words {
		s, err := interpolate(w)
		if err != nil {
			return nil, err
		}
		words[i] = s
	}
	return words, nil
}

// splitWords splits a command line into words with single and double quotes, as Compose's
// shlex does.
func splitWords(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inWord, quote := false, byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
				continue
			}
			if c == '\\' && quote == '"' && i+1 < len(s) {
				i++
				c = s[i]
			}
			cur.WriteByte(c)
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, errors.New("a quote is not closed")
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out, nil
}

// environment is a mapping, or a list of NAME=value.
func environment(v any) (map[string]string, error) {
	out := map[string]string{}
	switch x := v.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		for k, val := range x {
			s, err := interpolate(scalar(val))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			out[k] = s
		}
	case []any:
		for _, item := range x {
			k, val, ok := strings.Cut(scalar(item), "=")
			if !ok {
				return nil, fmt.Errorf("%q is not NAME=value (a name alone reads the Compose CLI's environment)", k)
			}
			s, err := interpolate(val)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			out[k] = s
		}
	default:
		return nil, errors.New("must be a mapping or a list")
	}
	return out, nil
}

func stringMap(v any) (map[string]string, error) {
	if v == nil {
		return nil, nil
	}
	switch x := v.(type) {
	case map[string]any:
		out := map[string]string{}
		for k, val := range x {
			out[k] = scalar(val)
		}
		return out, nil
	case []any:
		out := map[string]string{}
		for _, item := range x {
			k, val, _ := strings.Cut(scalar(item), "=")
			out[k] = val
		}
		return out, nil
	}
	return nil, errors.New("must be a mapping or a list")
}

// servicePorts are the container ports to publish. The host picks the port: a fixed port of
// the host (published) is the platform's to give, not a template's.
func servicePorts(v any) ([]int, error) {
	if v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, errors.New("must be a list")
	}
	var out []int
	for _, item := range list {
		target := ""
		switch x := item.(type) {
		case map[string]any:
			for k, val := range x {
				switch k {
				case "target":
					target = scalar(val)
				case "published":
					if p := scalar(val); p != "" && p != "0" {
						return nil, fmt.Errorf("published %s: the host picks the port a dependency is published on; a fixed port of the host is the platform's", p)
					}
				case "protocol":
					if scalar(val) != "tcp" {
						return nil, fmt.Errorf("protocol %v: tcp only", val)
					}
				default:
					return nil, fmt.Errorf("%s is not run by the Docker runtime (it publishes target ports)", k)
				}
			}
		default:
			target = scalar(x)
			if strings.Contains(target, ":") {
				return nil, fmt.Errorf("%q: the host picks the port a dependency is published on; a fixed port of the host is the platform's", target)
			}
		}
		port, err := strconv.Atoi(target)
		if err != nil || port < 1 || port > 65535 {
			return nil, fmt.Errorf("%q is not a port", target)
		}
		out = append(out, port)
	}
	return out, nil
}

// mounts are named volumes of the fragment and files of the mounts directory; a directory
// of the host is never mounted.
func mounts(v any, f Fragment) ([]Mount, error) {
	if v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, errors.New("must be a list")
	}
	var out []Mount
	for _, item := range list {
		var typ, source, target string
		readOnly := false
		switch x := item.(type) {
		case string:
			parts := strings.Split(x, ":")
			if len(parts) < 2 || len(parts) > 3 {
				return nil, fmt.Errorf("%q is not source:target[:ro]", x)
			}
			source, target = parts[0], parts[1]
			readOnly = len(parts) == 3 && parts[2] == "ro"
			typ = "volume"
			if strings.HasPrefix(source, "/") || strings.HasPrefix(source, ".") {
				typ = "bind"
			}
		case map[string]any:
			for k, val := range x {
				switch k {
				case "type":
					typ = scalar(val)
				case "source":
					source = scalar(val)
				case "target":
					target = scalar(val)
				case "read_only":
					readOnly, _ = val.(bool)
				case "volume", "bind":
					// nocopy, create_host_path: how Compose prepares what the runtime makes itself.
				default:
					return nil, fmt.Errorf("%s is not run by the Docker runtime", k)
				}
			}
		default:
			return nil, errors.New("each mount must be a string or a mapping")
		}
		if !strings.HasPrefix(target, "/") {
			return nil, fmt.Errorf("target %q must be an absolute path", target)
		}
		m := Mount{Target: target, ReadOnly: readOnly}
		switch typ {
		case "volume":
			if _, ok := f.Volumes[source]; !ok {
				return nil, fmt.Errorf("volume %q is not one the definition declares", source)
			}
			m.Volume = source
		case "bind":
			rel, ok := strings.CutPrefix(source, MountsDirectory+"/")
			if !ok {
				return nil, fmt.Errorf("bind %q: only the definition's files (under .MountsDirectory) are mounted, never a directory of the host", source)
			}
			clean, err := relativeFile(rel)
			if err != nil {
				return nil, fmt.Errorf("bind %q: %w", source, err)
			}
			m.Files = clean
		default:
			return nil, fmt.Errorf("type %q: the Docker runtime mounts volumes and the definition's files", typ)
		}
		out = append(out, m)
	}
	return out, nil
}

// relativeFile is a path under the mounts directory, cleaned: no .., no absolute path.
func relativeFile(p string) (string, error) {
	parts := strings.Split(strings.Trim(p, "/"), "/")
	for _, part := range parts {
		if part == "" || part == "." || part == ".." {
			return "", fmt.Errorf("%q is not a path under the mounts directory", p)
		}
	}
	return strings.Join(parts, "/"), nil
}

func healthcheck(v any) (*Healthcheck, error) {
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("must be a mapping")
	}
	h := &Healthcheck{}
	for k, val := range m {
		var err error
		switch k {
		case "test":
			h.Test, err = healthTest(val)
		case "interval":
			h.Interval, err = time.ParseDuration(scalar(val))
		case "timeout":
			h.Timeout, err = time.ParseDuration(scalar(val))
		case "start_period":
			h.StartPeriod, err = time.ParseDuration(scalar(val))
		case "retries":
			h.Retries, err = strconv.Atoi(scalar(val))
		case "disable":
			if b, _ := val.(bool); b {
				return nil, nil
			}
		default:
			err = errors.New("is not run by the Docker runtime")
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
	}
	if len(h.Test) == 0 {
		return nil, errors.New("no test")
	}
	return h, nil
}

// healthTest is CMD's argv or CMD-SHELL's command; a string is CMD-SHELL's.
func healthTest(v any) ([]string, error) {
	if s, ok := v.(string); ok {
		cmd, err := interpolate(s)
		return []string{"CMD-SHELL", cmd}, err
	}
	words, err := command(v)
	if err != nil {
		return nil, err
	}
	if len(words) < 2 || words[0] != "CMD" && words[0] != "CMD-SHELL" {
		return nil, errors.New("must be [CMD, ...] or [CMD-SHELL, command]")
	}
	return words, nil
}

func dependsOn(v any) (map[string]string, error) {
	out := map[string]string{}
	switch x := v.(type) {
	case nil:
		return nil, nil
	case []any:
		for _, name := range x {
			out[scalar(name)] = ServiceStarted
		}
	case map[string]any:
		for name, val := range x {
			cond := ServiceStarted
			if m, ok := val.(map[string]any); ok {
				for k, c := range m {
					switch k {
					case "condition":
						cond = scalar(c)
					case "restart", "required":
					default:
						return nil, fmt.Errorf("%s: %s is not run by the Docker runtime", name, k)
					}
				}
			}
			out[name] = cond
		}
	default:
		return nil, errors.New("must be a list or a mapping")
	}
	return out, nil
}
