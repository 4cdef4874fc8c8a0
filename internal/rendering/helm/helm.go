// Package helm renders a Helm chart the way the runtime needs it: client-only, with no
// release storage and no cluster access. The chart's templates see fixed capabilities
// (KubeVersion, the built-in API versions) and a release that is always a first install, and
// the template functions that would read the clock, randomness, DNS or the cluster fail
// instead of answering, so the same chart and values always render the same bytes.
package helm

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"path"
	"sort"
	"strings"
	"sync"
	"text/template"

	"helm.sh/helm/v4/pkg/chart/common"
	commonutil "helm.sh/helm/v4/pkg/chart/common/util"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/score-orchestrator/score-orchestrator/internal/templating/yamltemplate"
)

// KubeVersion is the Kubernetes version charts see as .Capabilities.KubeVersion: the
// version of the Kubernetes libraries the runtime is built with, not the cluster's.
const KubeVersion = "v1.37.0"

// Input is one chart rendering.
type Input struct {
	// Chart is the chart archive (.tgz).
	Chart []byte
	// ReleaseName and Namespace are .Release.Name and .Release.Namespace.
	ReleaseName, Namespace string
	// Values override the chart's values.yaml (coalesced as helm install --values does).
	Values map[string]any
}

// ErrNotDeterministic is a template calling a function that would read the clock,
// randomness, DNS or the cluster.
var ErrNotDeterministic = errors.New("is not available: rendering must not depend on the clock, randomness, DNS or the cluster")

// Render renders the chart and returns its objects as a YAML stream, in Helm's install
// order. The chart's templates are guarded (yamltemplate): what their actions print is in the
// stream as tokens, which yamltemplate.Decode puts back as values. Hooks (objects annotated helm.sh/hook) and NOTES.txt are left out: there is no
// release whose lifecycle would run them. The chart's crds/ directory is not rendered.
func Render(in Input) ([]byte, error) {
	ch, err := loader.LoadArchive(bytes.NewReader(in.Chart))
	if err != nil {
		return nil, fmt.Errorf("the chart does not load: %w", err)
	}
	caps := capabilities()
	if ch.Metadata.KubeVersion != "" && !chartutil.IsCompatibleRange(ch.Metadata.KubeVersion, caps.KubeVersion.String()) {
		return nil, fmt.Errorf("the chart requires kubeVersion %s; charts render for Kubernetes %s", ch.Metadata.KubeVersion, KubeVersion)
	}
	if err := missingDependencies(ch); err != nil {
		return nil, err
	}
	vals := in.Values
	if vals == nil {
		vals = map[string]any{}
	}
	if err := chartutil.ProcessDependencies(ch, vals); err != nil {
		return nil, fmt.Errorf("the chart's dependencies: %w", err)
	}
	// values.schema.json is not enforced: its remote $refs would reach the network.
	top, err := commonutil.ToRenderValuesWithSchemaValidation(ch, vals, common.ReleaseOptions{Name: in.ReleaseName, Namespace: in.Namespace, Revision: 1, IsInstall: true}, caps, true)
	if err != nil {
		return nil, fmt.Errorf("the chart's values: %w", err)
	}
	if err := guard(ch); err != nil {
		return nil, err
	}
	funcs := deterministicFuncs()
	maps.Copy(funcs, yamltemplate.Funcs())
	e := engine.Engine{CustomTemplateFuncs: funcs}
	files, err := e.Render(ch, top)
	if err != nil {
		return nil, fmt.Errorf("the chart failed to render: %w", err)
	}
	for name := range files {
		if strings.HasSuffix(name, "NOTES.txt") {
			delete(files, name)
		}
	}
	_, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		return nil, yamltemplate.OutputErrorf("the chart's output: %w", err)
	}
	var out bytes.Buffer
	for _, m := range manifests {
		fmt.Fprintf(&out, "---\n# Source: %s\n%s\n", m.Name, strings.TrimRight(m.Content, "\n"))
	}
	return out.Bytes(), nil
}

// guarded caches charts' templates guarded, by their text: a chart renders every plan of its
// backend, and it is pinned by digest.
var guarded = struct {
	sync.Mutex
	m map[[sha256.Size]byte]string
}{m: map[[sha256.Size]byte]string{}}

// guard replaces the templates of the chart and of the charts it packages by their guarded
// text (yamltemplate.GuardText), so that what a value holds cannot become structure however
// a template prints it.
func guard(ch *chartv2.Chart) error {
	for _, t := range ch.Templates {
		key := sha256.Sum256(append([]byte(t.Name+"\x00"), t.Data...))
		guarded.Lock()
		text, ok := guarded.m[key]
		guarded.Unlock()
		if !ok {
			var err error
			if text, err = yamltemplate.GuardText(path.Join(ch.ChartFullPath(), t.Name), string(t.Data), yamltemplate.Helm); err != nil {
				return fmt.Errorf("the chart's template %s: %w", t.Name, err)
			}
			guarded.Lock()
			if len(guarded.m) >= 4096 {
				guarded.m = map[[sha256.Size]byte]string{}
			}
			guarded.m[key] = text
			guarded.Unlock()
		}
		t.Data = []byte(text)
	}
	for _, dep := range ch.Dependencies() {
		if err := guard(dep); err != nil {
			return err
		}
	}
	return nil
}

// missingDependencies refuses a chart whose declared dependencies are not packaged in it:
// the runtime never downloads them.
func missingDependencies(ch *chartv2.Chart) error {
	have := map[string]bool{}
	for _, d := range ch.Dependencies() {
		have[d.Name()] = true
	}
	var missing []string
	for _, d := range ch.Metadata.Dependencies {
		if !have[d.Name] {
			missing = append(missing, d.Name)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("the chart's dependencies %s are not packaged in it (run helm dependency build before packaging)", strings.Join(missing, ", "))
	}
	return nil
}

// apiVersions are the API versions charts see as .Capabilities.APIVersions: the built-in
// ones of the Kubernetes libraries the runtime is built with, from a scheme of its own so
// that nothing registered elsewhere in the process changes them. Built on first use: a
// command that renders no chart does not pay for it at start.
var apiVersions = sync.OnceValue(func() common.VersionSet {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = apiextensionsv1.AddToScheme(s)
	var vs common.VersionSet
	for _, gv := range s.PrioritizedVersionsAllGroups() {
		vs = append(vs, gv.String())
	}
	sort.Strings(vs)
	return vs
})

// capabilities are fixed: neither the cluster, nor whether this is a test build, nor the Go
// version changes them.
func capabilities() *common.Capabilities {
	caps := common.DefaultCapabilities.Copy()
	kv, err := common.ParseKubeVersion(KubeVersion)
	if err != nil {
		panic(err)
	}
	caps.KubeVersion = *kv
	caps.APIVersions = apiVersions()
	caps.HelmVersion.GoVersion, caps.HelmVersion.GitCommit, caps.HelmVersion.GitTreeState = "", "", ""
	caps.HelmVersion.KubeClientVersion = "v" + kv.Major + "." + kv.Minor
	return caps
}

// deterministicFuncs replaces the template functions that read the clock, randomness, DNS
// or the cluster with ones that fail and say why.
func deterministicFuncs() template.FuncMap {
	fm := template.FuncMap{}
	for _, name := range []string{
		"now", "ago",
		"randAlpha", "randAlphaNum", "randAscii", "randNumeric", "randBytes", "randInt", "uuidv4", "shuffle",
		"genPrivateKey", "genCA", "genCAWithKey", "genSelfSignedCert", "genSelfSignedCertWithKey", "genSignedCert", "genSignedCertWithKey",
		"bcrypt", "htpasswd", "encryptAES",
		"getHostByName", "lookup",
	} {
		fm[name] = func(...any) (string, error) { return "", fmt.Errorf("%s %w", name, ErrNotDeterministic) }
	}
	return fm
}
