package provisioning

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/config/orchconfig"
)

// RunInput is one run: the definition that serves a claim, and what its data is made of (the
// instance's identity and stored state, the claim's class, params and metadata, the Workloads
// the definition sees). The definition's sharing is taken from the definition.
type RunInput struct {
	Definition orchconfig.Provisioner
	Data       DataInput
}

// Outcome is what a run did, as far as it got. A run stops at the first step that cannot
// complete, with a *StepError naming it; the fields of the steps before it are set.
type Outcome struct {
	// Result is what the definition produced: manifests, outputs, state, the run it stamped
	// (http+api://: its state and, once ready, its outputs).
	Result Result
	// Progress is an http+api:// instance that is not ready: the run stopped at it.
	Progress *Progress
	// Applied is what Env.Apply placed.
	Applied Applied
	// Plain are the outputs for the claim's status, Secret the secret ones, resolved, for its
	// outputs Secret. Set once the run completed.
	Plain  map[string]any
	Secret map[string]string
	// StandIn says the definition was not run (Env.Offline): Plain holds a stand-in naming
	// each expected output.
	StandIn bool
}

// Applied is what placing a run's objects did.
type Applied struct {
	// Objects are the inventory entries of what was placed, in order, each with its health.
	Objects []scorev1b1.AppliedObject
	// Waiting names the definitions (a CustomResourceDefinition not Established yet) the later
	// objects wait for: those were not placed, and the run is not complete.
	Waiting []string
	// RunOutputs are the outputs a runnable:// run publishes, once it has (nil while it runs).
	RunOutputs map[string]any
}

// Complete reports whether every object of the run was placed.
func (a Applied) Complete() bool { return len(a.Waiting) == 0 }

// Progress is where an instance provisioned over several runs (http+api://) stands while it
// is not ready.
type Progress struct {
	Phase   ProgressPhase
	Message string
	// After is when to run again; zero waits for a change.
	After time.Duration
}

// ProgressPhase is where an instance provisioned over several runs stands.
type ProgressPhase int

const (
	// ProgressPending is an instance created, or being created, that is not ready yet.
	ProgressPending ProgressPhase = iota
	// ProgressRetrying is an attempt that failed (a create request): the next one is made
	// After.
	ProgressRetrying
	// ProgressFailed is an instance that failed for good (the API says so, it timed out, or
	// its state cannot be read): a new instance starts afresh.
	ProgressFailed
)

// Step is a step of a run.
type Step int

const (
	// StepProvision runs the definition: its templates, chart, command or API requests.
	StepProvision Step = iota
	// StepState keeps the instance's state (Env.SaveState).
	StepState
	// StepApply places the run's objects (Env.Apply).
	StepApply
	// StepOutputs resolves the outputs' secret references.
	StepOutputs
)

// StepError is a run stopped by the error of one of its steps. Its message is the error's.
type StepError struct {
	Step Step
	Err  error
}

func (e *StepError) Error() string { return e.Err.Error() }
func (e *StepError) Unwrap() error { return e.Err }

// StepOf is the step that stopped a run with err; an error that is not a *StepError is the
// definition's own (StepProvision).
func StepOf(err error) Step {
	var s *StepError
	if errors.As(err, &s) {
		return s.Step
	}
	return StepProvision
}

// ErrRunFailed is a runnable:// run that ended in failure: terminal for its inputs, as the run
// is immutable and never run again.
var ErrRunFailed = errors.New("the run failed")

// Run is one provisioning run, the same for the provisioner and scorectl render: the data,
// the definition run by its strategy (Provision, or Env.API's step for http+api://), its state
// kept (Env.SaveState), its objects placed (Env.Apply) and a runnable:// run's outputs read,
// then the outputs split into plain and secret ones, a Secret they refer to read from the
// run's own manifests or else through Env.Secret. Only references the definition made in the
// run resolve, and only to Secrets of the instance or that the definition lists; the tenant's
// data holds none (secretref.go). What only a cluster knows (stored state, Secrets, the
// external API, commands) comes through env.
func Run(ctx context.Context, in RunInput, env Env) (Outcome, error) {
	def := in.Definition
	strategy, err := orchconfig.StrategyOf(def.URI)
	if err != nil {
		return Outcome{}, &StepError{Step: StepProvision, Err: err}
	}
	in.Data.Sharing = def.Sharing
	data := NewData(in.Data)
	if err := CheckData(data); err != nil {
		return Outcome{}, &StepError{Step: StepProvision, Err: err}
	}
	def = withMadeReferences(def)
	var out Outcome
	switch {
	case env.Offline && !strategy.Pure():
		return standIns(def), nil
	case strategy == orchconfig.StrategyAPI:
		out, err = runAPI(ctx, def, data, env)
	default:
		out, err = runOnce(ctx, strategy, def, data, env)
	}
	if err != nil || out.Progress != nil || !out.Applied.Complete() {
		return out, err
	}
	var read func(SecretRef) (ReferencedSecret, error)
	if env.Secret != nil {
		read = func(ref SecretRef) (ReferencedSecret, error) { return env.Secret(ctx, ref) }
	}
	lookup := referredSecret(def, data.Instance, out.Applied.Objects, SecretsInManifests(out.Result.Manifests), read)
	out.Plain, out.Secret, err = SplitOutputs(out.Result.Outputs, lookup)
	if err != nil {
		return out, &StepError{Step: StepOutputs, Err: err}
	}
	if strategy == orchconfig.StrategyAPI && def.API != nil {
		moveToSecret(def.API.SecretOutputs, out.Plain, out.Secret)
	}
	if def.EmitsCompose() {
		moveToSecret(composeSecretOutputs(out.Plain), out.Plain, out.Secret)
	}
	return out, nil
}

// runOnce runs a definition whose strategy is one run: provisioned, its state kept, its
// objects placed, a run's outputs added to its own.
func runOnce(ctx context.Context, strategy orchconfig.Strategy, def orchconfig.Provisioner, data Data, env Env) (Outcome, error) {
	res, err := Provision(ctx, strategy, def, data, env)
	if err != nil {
		return Outcome{}, &StepError{Step: StepProvision, Err: err}
	}
	out := Outcome{Result: res}
	objs, objsErr := res.Objects()
	if env.Apply == nil || objsErr != nil {
		// Nothing to place: the state is kept as it is when placing starts.
		if err := env.saveState(ctx, res); err != nil {
			return out, &StepError{Step: StepState, Err: err}
		}
		if objsErr != nil {
			return out, &StepError{Step: StepApply, Err: objsErr}
		}
	} else {
		// The state is kept by the applier, before it changes anything that exists
		// (Env.Apply); its error is the run's, at StepState. What was placed is kept also when
		// placing failed: a failed run is listed.
		var saveErr error
		save := func(ctx context.Context) error {
			saveErr = env.saveState(ctx, res)
			return saveErr
		}
		out.Applied, err = env.Apply(ctx, objs, res.Run, save)
		switch {
		case saveErr != nil:
			return out, &StepError{Step: StepState, Err: saveErr}
		case err != nil:
			return out, &StepError{Step: StepApply, Err: err}
		}
	}
	if res.Run != nil {
		out.Result.Outputs = PatchMap(res.Outputs, out.Applied.RunOutputs)
	}
	return out, nil
}

// runAPI takes an http+api:// instance one step through env.API, which keeps its progress in
// the state with env.SaveState.
func runAPI(ctx context.Context, def orchconfig.Provisioner, data Data, env Env) (Outcome, error) {
	if env.API == nil {
		return Outcome{}, &StepError{Step: StepProvision, Err: fmt.Errorf("%w: http+api provisioners cannot run here", ErrNotRunnable)}
	}
	save := func(ctx context.Context, res Result) error {
		if err := env.saveState(ctx, res); err != nil {
			return &StepError{Step: StepState, Err: err}
		}
		return nil
	}
	res, progress, err := env.API(ctx, def, data, save)
	var step *StepError
	if err != nil && !errors.As(err, &step) {
		err = &StepError{Step: StepProvision, Err: err}
	}
	return Outcome{Result: res, Progress: progress}, err
}

// standIns is a definition not run here: a stand-in naming each expected output, so that what
// consumes them still renders.
func standIns(def orchconfig.Provisioner) Outcome {
	out := Outcome{StandIn: true, Plain: map[string]any{}, Secret: map[string]string{}}
	for _, k := range def.ExpectedOutputs {
		out.Plain[k] = fmt.Sprintf("<output %s of %s, known in the cluster>", k, def.URI)
	}
	return out
}

// moveToSecret moves the outputs an http+api:// definition names as secret from plain into
// secret; a value that is not a string is stored as JSON.
func moveToSecret(names []string, plain map[string]any, secret map[string]string) {
	for _, k := range names {
		v, ok := plain[k]
		if !ok {
			continue
		}
		delete(plain, k)
		if s, ok := v.(string); ok {
			secret[k] = s
			continue
		}
		raw, _ := json.Marshal(v)
		secret[k] = string(raw)
	}
}

func (env Env) saveState(ctx context.Context, res Result) error {
	if env.SaveState == nil {
		return nil
	}
	return env.SaveState(ctx, res)
}
