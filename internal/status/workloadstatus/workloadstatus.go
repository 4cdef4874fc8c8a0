// Package workloadstatus computes a Workload's abstract conditions: one setter per
// condition's situation, each with a neutral message, and exactly one function that derives
// Ready from the others. It is pure: the time of a transition is passed in.
package workloadstatus

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scorev1b1 "github.com/score-orchestrator/score-orchestrator/api/v1b1"
	"github.com/score-orchestrator/score-orchestrator/internal/termtext"
)

// Condition is one abstract condition before it is written.
type Condition struct {
	Status  metav1.ConditionStatus
	Reason  scorev1b1.Reason
	Message string
	// Updating: ready, and being updated while what was ready stays: a dependency whose
	// outputs stay published (ClaimsReady), or runtime objects rolling out behind those that
	// serve (RuntimeReady). Ready says so.
	Updating bool
}

// Conditions are the three conditions Ready derives from.
type Conditions struct {
	InputsValid  Condition
	ClaimsReady  Condition
	RuntimeReady Condition
}

// Ready derives the Ready condition: True when all three are True (its reason is then the
// runtime's, Succeeded or RuntimeDegraded); otherwise the first condition that is not True,
// in the order inputs, claims, runtime, gives its reason and message.
func Ready(c Conditions) Condition {
	for _, cond := range []Condition{c.InputsValid, c.ClaimsReady, c.RuntimeReady} {
		if cond.Status != metav1.ConditionTrue {
			status := metav1.ConditionFalse
			return Condition{Status: status, Reason: cond.Reason, Message: cond.Message}
		}
	}
	if c.RuntimeReady.Reason == scorev1b1.ReasonRuntimeDegraded {
		return Condition{Status: metav1.ConditionTrue, Reason: scorev1b1.ReasonRuntimeDegraded, Message: msgReadyDegraded}
	}
	if c.ClaimsReady.Updating {
		return Condition{Status: metav1.ConditionTrue, Reason: scorev1b1.ReasonSucceeded, Message: msgReadyUpdating}
	}
	if c.RuntimeReady.Updating {
		return Condition{Status: metav1.ConditionTrue, Reason: scorev1b1.ReasonSucceeded, Message: msgReadyRolling}
	}
	return Condition{Status: metav1.ConditionTrue, Reason: scorev1b1.ReasonSucceeded, Message: msgReady}
}

// Apply writes the conditions and the derived Ready into existing (a copy is returned),
// keeping lastTransitionTime where the status did not change. Messages are written with
// their terminal controls escaped (a claim's carries what its params made a provisioner say).
func Apply(existing []metav1.Condition, c Conditions, generation int64, now metav1.Time) []metav1.Condition {
	out := make([]metav1.Condition, len(existing))
	copy(out, existing)
	set := func(typ string, cond Condition) {
		meta.SetStatusCondition(&out, metav1.Condition{
			Type: typ, Status: cond.Status, Reason: string(cond.Reason), Message: termtext.Escape(cond.Message),
			ObservedGeneration: generation, LastTransitionTime: now,
		})
	}
	set(scorev1b1.ConditionInputsValid, c.InputsValid)
	set(scorev1b1.ConditionClaimsReady, c.ClaimsReady)
	set(scorev1b1.ConditionRuntimeReady, c.RuntimeReady)
	ready := Ready(c)
	set(scorev1b1.ConditionReady, ready)
	// Stalled follows Ready: there while Ready waits for a person, gone otherwise. It changes
	// only when Ready's status or reason does, so it costs no write of its own.
	if ready.Status == metav1.ConditionFalse && !ready.Reason.Waits() {
		set(scorev1b1.ConditionStalled, Condition{Status: metav1.ConditionTrue, Reason: ready.Reason, Message: ready.Message})
	} else {
		meta.RemoveStatusCondition(&out, scorev1b1.ConditionStalled)
	}
	order := map[string]int{scorev1b1.ConditionInputsValid: 0, scorev1b1.ConditionClaimsReady: 1, scorev1b1.ConditionRuntimeReady: 2, scorev1b1.ConditionReady: 3, scorev1b1.ConditionStalled: 4}
	sort.SliceStable(out, func(i, j int) bool { return order[out[i].Type] < order[out[j].Type] })
	return out
}

// cond is a condition that is not Updating.
func cond(status metav1.ConditionStatus, reason scorev1b1.Reason, message string) Condition {
	return Condition{Status: status, Reason: reason, Message: message}
}

// Transition is a condition whose status or reason changed.
type Transition struct {
	Type      string
	Condition Condition
}

// Transitions lists the conditions whose status or reason differ between before and after;
// events are emitted for these only.
func Transitions(before, after []metav1.Condition) []Transition {
	var out []Transition
	for _, a := range after {
		b := meta.FindStatusCondition(before, a.Type)
		if b == nil || b.Status != a.Status || b.Reason != a.Reason {
			out = append(out, Transition{Type: a.Type, Condition: Condition{Status: a.Status, Reason: scorev1b1.Reason(a.Reason), Message: a.Message}})
		}
	}
	return out
}

// Messages. They never name a runtime noun; a test checks every one.
const (
	msgReady                = "The workload is ready."
	msgReadyDegraded        = "The workload is ready with reduced capacity."
	msgReadyUpdating        = "The workload is ready; a dependency is being updated."
	msgReadyRolling         = "The workload is ready; an update is rolling out."
	msgRolling              = "The workload is running while an update rolls out."
	msgInputsValid          = "The workload specification is valid."
	msgNoDependencies       = "The workload has no dependencies."
	msgAllDependencies      = "All dependencies are ready."
	msgDependenciesUpdating = "All dependencies are ready; being updated: %s."
	msgBlockedByInputs      = "Not evaluated while the workload specification is invalid."
	msgAwaitingConfig       = "Waiting for the platform configuration."
	msgWaitingForClaims     = "Waiting for dependencies before deployment."
	msgProjectionError      = "One or more required outputs are not resolved."
	msgProvisioning         = "The workload is being deployed."
	msgRunning              = "The workload is running."
	msgDegraded             = "The workload is running with reduced capacity."
	msgNetworkUnavailable   = "The workload is deployed but its endpoint is not reachable yet."
	msgRuntimeUnreachable   = "The runtime the workload is deployed to does not answer; nothing has been changed or removed."
	msgNoCluster            = "No runtime location the platform offers for this workload is available."
	msgPolicyViolation      = "A platform policy denied the workload's deployment."
	msgQuotaExceeded        = "The workload's deployment exceeds a quota."
	msgPermissionDenied     = "The platform is not permitted to deploy the workload."
	msgRuntimeFailed        = "The workload could not be deployed."
	msgObjectConflict       = "Another workload owns an object this workload would create; it is not taken over."
	msgClaimPolicyViolation = "A platform policy denied dependency %q."
	msgClaimQuota           = "Dependency %q exceeds a quota."
	msgClaimPermission      = "The platform is not permitted to provision dependency %q."
	msgClaimFailed          = "Dependency %q could not be provisioned."
	msgClaimWaitingOutputs  = "Waiting for the outputs of %s."
	msgClaimPending         = "Waiting to be provisioned."
	msgClaimBinding         = "Being provisioned."
	msgClaimBoundNoOutputs  = "Provisioned; waiting for its outputs."
	msgClaimBound           = "Ready."
	msgClaimUpdating        = "Ready; being updated."
	msgClaimsWaiting        = "Waiting for %d of %d dependencies: %s."
	msgDeleting             = "Deleting; waiting for dependencies to be released: %s."
	msgNamespaceDeleting    = "The namespace is being deleted; nothing more is deployed in it."
	msgTooLarge             = "The workload is larger than the platform accepts once its values are composed; make it smaller."
)

// InputsValid says the specification is valid.
func InputsValid() Condition {
	return cond(metav1.ConditionTrue, scorev1b1.ReasonSucceeded, msgInputsValid)
}

// SpecInvalid reports the first problem and how many more there are.
func SpecInvalid(first string, more int) Condition {
	msg := first
	if more > 0 {
		msg = fmt.Sprintf("%s (and %d more problem%s)", strings.TrimSuffix(first, "."), more, plural(more))
		msg += "."
	}
	return cond(metav1.ConditionFalse, scorev1b1.ReasonSpecInvalid, msg)
}

// TooLarge says an object derived from the workload was refused for its size: it stays
// refused until the workload changes.
func TooLarge() Condition {
	return cond(metav1.ConditionFalse, scorev1b1.ReasonSpecInvalid, msgTooLarge)
}

// Selection reports a selection failure with the selection's own neutral message.
func Selection(reason scorev1b1.Reason, message string) Condition {
	return cond(metav1.ConditionFalse, reason, message)
}

// BlockedByInputs is the claims and runtime conditions while the inputs are invalid.
func BlockedByInputs() Condition {
	return cond(metav1.ConditionFalse, scorev1b1.ReasonSpecInvalid, msgBlockedByInputs)
}

// AwaitingConfig is the runtime condition before any valid platform configuration is known.
func AwaitingConfig() Condition {
	return cond(metav1.ConditionFalse, scorev1b1.ReasonRuntimeSelecting, msgAwaitingConfig)
}

// NamespaceDeleting is the claims' and the runtime's condition while the Workload's namespace is
// being deleted: nothing is created in it any more, and the Workload goes with it.
func NamespaceDeleting() Condition {
	return cond(metav1.ConditionFalse, scorev1b1.ReasonClaimPending, msgNamespaceDeleting)
}

// PreviewRefused is the claims' and the runtime's condition in a preview environment the
// platform refuses (previews disabled, over its limit): nothing is provisioned or deployed
// until it is admitted. The message is the policy's own.
func PreviewRefused(message string) Condition {
	return cond(metav1.ConditionFalse, scorev1b1.ReasonPolicyViolation, message)
}

// PolicyRefused is the claims' and the runtime's condition for a Workload a platform rule
// refuses (a volume mounted by name that the platform does not admit): nothing is provisioned
// or deployed for it until it changes. The message is the rule's own, naming the field.
func PolicyRefused(message string) Condition {
	return cond(metav1.ConditionFalse, scorev1b1.ReasonPolicyViolation, message)
}

// WaitingForClaims is the runtime condition while dependencies are not ready.
func WaitingForClaims() Condition {
	return cond(metav1.ConditionFalse, scorev1b1.ReasonClaimPending, msgWaitingForClaims)
}

// ProjectionError is the runtime condition while an output is not resolved: no plan is emitted.
func ProjectionError() Condition {
	return cond(metav1.ConditionFalse, scorev1b1.ReasonProjectionError, msgProjectionError)
}

// Provisioning is the runtime condition while the runtime works on the plan.
func Provisioning() Condition {
	return cond(metav1.ConditionUnknown, scorev1b1.ReasonRuntimeProvisioning, msgProvisioning)
}

// RollingOut is the runtime condition while a change the platform made to a ready Workload (its
// config, a template, a dependency's outputs; not the Workload's own spec) rolls out behind the
// runtime objects that serve: it stays ready.
func RollingOut() Condition {
	c := cond(metav1.ConditionTrue, scorev1b1.ReasonSucceeded, msgRolling)
	c.Updating = true
	return c
}

// RuntimeUnreachable is the runtime condition while the cluster the workload is placed on does
// not answer: what runs there is left as it is.
func RuntimeUnreachable() Condition {
	return cond(metav1.ConditionFalse, scorev1b1.ReasonNetworkUnavailable, msgRuntimeUnreachable)
}

// NoCluster is the runtime condition when the backend places its Workloads on member clusters
// and none of the registered clusters matches.
func NoCluster() Condition {
	return cond(metav1.ConditionFalse, scorev1b1.ReasonRuntimeSelecting, msgNoCluster)
}

// Denied is the condition for a write the API server refused with an abstract reason.
func Denied(reason scorev1b1.Reason) Condition {
	return Runtime(metav1.ConditionFalse, reason)
}

// ObjectConflict is the runtime condition when an object the workload's template renders
// belongs to another workload: nothing is deployed, and the other workload keeps it.
func ObjectConflict() Condition {
	return cond(metav1.ConditionFalse, scorev1b1.ReasonPermissionDenied, msgObjectConflict)
}

// Runtime is the runtime condition for a normalised runtime status and reason.
func Runtime(status metav1.ConditionStatus, reason scorev1b1.Reason) Condition {
	switch reason {
	case scorev1b1.ReasonSucceeded:
		return cond(status, reason, msgRunning)
	case scorev1b1.ReasonRuntimeDegraded:
		return cond(status, reason, msgDegraded)
	case scorev1b1.ReasonRuntimeProvisioning:
		return cond(status, reason, msgProvisioning)
	case scorev1b1.ReasonNetworkUnavailable:
		return cond(status, reason, msgNetworkUnavailable)
	case scorev1b1.ReasonPolicyViolation:
		return cond(status, reason, msgPolicyViolation)
	case scorev1b1.ReasonQuotaExceeded:
		return cond(status, reason, msgQuotaExceeded)
	case scorev1b1.ReasonPermissionDenied:
		return cond(status, reason, msgPermissionDenied)
	default:
		if !reason.IsKnown() || reason == scorev1b1.ReasonClaimPending || reason == scorev1b1.ReasonClaimFailed {
			reason = scorev1b1.ReasonRuntimeProvisioning
		}
		return cond(metav1.ConditionFalse, reason, msgRuntimeFailed)
	}
}

// ClaimState is what the status needs to know of one dependency.
type ClaimState struct {
	Key   string
	Phase scorev1b1.ClaimPhase
	// Reason is the provisioner's abstract reason when Failed.
	Reason           scorev1b1.Reason
	OutputsAvailable bool
	// WaitingFor lists dependencies whose outputs this one's params need.
	WaitingFor []string
	// Denied is the reason the API server refused to write the claim, if it did.
	Denied scorev1b1.Reason
	// WasReady: the Workload's status last said the dependency was ready (its summary's
	// reason Succeeded). Such a claim that is Binding again with its outputs still published
	// is being updated (its provisioner's definition changed, say): it still counts as ready.
	WasReady bool
	// Respecified: the claim has a new spec (a rollout moved it to another config revision, its
	// class or params changed) that the provisioner has not reported on yet. Phase and
	// OutputsAvailable are then what it last reported, of the previous spec, when that still
	// stands for the Workload (else Pending): what runs still has those outputs, but nothing
	// new is planned with them (Deployable) until the provisioner has taken the new spec.
	Respecified bool
}

// updating reports whether a dependency that was ready is being provisioned again while its
// outputs stay published: what it serves is still there, so it still counts as ready. That is
// a claim Binding again, or one whose new spec the provisioner has not taken yet, Bound (or
// Binding) under the previous one.
func (s ClaimState) updating() bool {
	again := s.Phase == scorev1b1.ClaimPhaseBinding || s.Respecified && s.Phase == scorev1b1.ClaimPhaseBound
	return s.WasReady && again && s.OutputsAvailable && s.Denied == "" && len(s.WaitingFor) == 0
}

// Claims summarises the dependencies into status.claims[] and ClaimsReady: True when every
// claim is Bound with its outputs, or was ready and is being updated with its outputs still
// published (the condition then names those, and is Updating); False with the first failed
// claim's reason when one failed; False/ClaimPending otherwise.
func Claims(states []ClaimState) ([]scorev1b1.ClaimSummary, Condition) {
	sort.Slice(states, func(i, j int) bool { return states[i].Key < states[j].Key })
	if len(states) == 0 {
		return nil, cond(metav1.ConditionTrue, scorev1b1.ReasonSucceeded, msgNoDependencies)
	}
	var summaries []scorev1b1.ClaimSummary
	var failed *Condition
	var waiting, updating []string
	for _, s := range states {
		sum := summarize(s)
		summaries = append(summaries, sum)
		switch {
		case sum.Phase == scorev1b1.ClaimPhaseFailed && failed == nil:
			failed = &Condition{Status: metav1.ConditionFalse, Reason: sum.Reason, Message: sum.Message}
		case s.updating():
			updating = append(updating, s.Key)
		case sum.Phase != scorev1b1.ClaimPhaseBound || !sum.OutputsAvailable:
			waiting = append(waiting, s.Key)
		}
	}
	switch {
	case failed != nil:
		return summaries, *failed
	case len(waiting) > 0:
		return summaries, Condition{Status: metav1.ConditionFalse, Reason: scorev1b1.ReasonClaimPending,
			Message: fmt.Sprintf(msgClaimsWaiting, len(waiting), len(states), strings.Join(waiting, ", "))}
	case len(updating) > 0:
		return summaries, Condition{Status: metav1.ConditionTrue, Reason: scorev1b1.ReasonSucceeded,
			Message: fmt.Sprintf(msgDependenciesUpdating, strings.Join(updating, ", ")), Updating: true}
	default:
		return summaries, Condition{Status: metav1.ConditionTrue, Reason: scorev1b1.ReasonSucceeded, Message: msgAllDependencies}
	}
}

// Deployable reports whether the plan may be emitted: when every claim is ready (claims is the
// ClaimsReady condition Claims returned), or, unless waitForReady, when every claim has
// published its outputs while it becomes healthy and none failed. Never while a claim's new
// spec is not taken yet: its outputs are the previous spec's, and a plan written with them
// would say it was rendered from what the new spec provisions (a rollout's revision).
func Deployable(states []ClaimState, claims Condition, waitForReady bool) bool {
	for _, s := range states {
		if s.Respecified {
			return false
		}
	}
	if claims.Status == metav1.ConditionTrue {
		return true
	}
	if waitForReady {
		return false
	}
	for _, s := range states {
		if s.Phase == scorev1b1.ClaimPhaseFailed || s.Denied != "" || len(s.WaitingFor) > 0 || !s.OutputsAvailable {
			return false
		}
	}
	return len(states) > 0
}

func summarize(s ClaimState) scorev1b1.ClaimSummary {
	sum := scorev1b1.ClaimSummary{Key: s.Key, Phase: s.Phase, OutputsAvailable: s.OutputsAvailable}
	if s.Denied != "" {
		sum.Phase, sum.Reason, sum.Message = scorev1b1.ClaimPhaseFailed, s.Denied, claimFailure(s.Denied, s.Key)
		return sum
	}
	if len(s.WaitingFor) > 0 {
		sum.Phase, sum.Reason, sum.Message = scorev1b1.ClaimPhasePending, scorev1b1.ReasonClaimPending, fmt.Sprintf(msgClaimWaitingOutputs, quoteAll(s.WaitingFor))
		return sum
	}
	if s.Respecified && !s.updating() {
		// Its new spec not taken yet, and what it last reported does not stand for the
		// Workload: it waits to be provisioned.
		sum.Phase, sum.Reason, sum.Message, sum.OutputsAvailable = scorev1b1.ClaimPhasePending, scorev1b1.ReasonClaimPending, msgClaimPending, false
		return sum
	}
	switch s.Phase {
	case scorev1b1.ClaimPhaseFailed:
		reason := s.Reason
		if !reason.IsKnown() || reason == scorev1b1.ReasonSucceeded || reason == scorev1b1.ReasonClaimPending {
			reason = scorev1b1.ReasonClaimFailed
		}
		sum.Reason, sum.Message = reason, claimFailure(reason, s.Key)
	case scorev1b1.ClaimPhaseBound:
		if s.updating() {
			// Bound under its previous spec, its new one not taken yet: being provisioned again.
			sum.Phase, sum.Reason, sum.Message = scorev1b1.ClaimPhaseBinding, scorev1b1.ReasonSucceeded, msgClaimUpdating
			break
		}
		if s.OutputsAvailable {
			sum.Reason, sum.Message = scorev1b1.ReasonSucceeded, msgClaimBound
		} else {
			sum.Reason, sum.Message = scorev1b1.ReasonClaimPending, msgClaimBoundNoOutputs
		}
	case scorev1b1.ClaimPhaseBinding:
		sum.Reason, sum.Message = scorev1b1.ReasonClaimPending, msgClaimBinding
		if s.updating() {
			// Its reason stays Succeeded: the next pass reads from it that the dependency
			// was ready (WasReady), so the update goes on counting as ready until it is Bound.
			sum.Reason, sum.Message = scorev1b1.ReasonSucceeded, msgClaimUpdating
		}
	default:
		sum.Phase, sum.Reason, sum.Message = scorev1b1.ClaimPhasePending, scorev1b1.ReasonClaimPending, msgClaimPending
	}
	return sum
}

func claimFailure(reason scorev1b1.Reason, key string) string {
	switch reason {
	case scorev1b1.ReasonPolicyViolation:
		return fmt.Sprintf(msgClaimPolicyViolation, key)
	case scorev1b1.ReasonQuotaExceeded:
		return fmt.Sprintf(msgClaimQuota, key)
	case scorev1b1.ReasonPermissionDenied:
		return fmt.Sprintf(msgClaimPermission, key)
	default:
		return fmt.Sprintf(msgClaimFailed, key)
	}
}

// Deleting says what deletion waits for.
func Deleting(waitingFor []string) Condition {
	return cond(metav1.ConditionFalse, scorev1b1.ReasonClaimPending, fmt.Sprintf(msgDeleting, strings.Join(waitingFor, ", ")))
}

func quoteAll(keys []string) string {
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = fmt.Sprintf("%q", k)
	}
	return strings.Join(q, ", ")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// runtimeNouns are words a Workload's status must never show: they belong to a runtime.
var runtimeNouns = regexp.MustCompile(`\b(Deployment|Pod|Pods|Service|StatefulSet|ReplicaSet|DaemonSet|Job|CronJob|Ingress|HTTPRoute|Gateway|ConfigMap|Secret|PersistentVolumeClaim|Namespace|Kubernetes|kubectl|Helm|ECS|Nomad|Knative|kustomize|container image)\b`)

// RuntimeNoun returns the first runtime noun in a message, or "". Tests use it to hold every
// message a Workload can show to the rule that none names a runtime.
func RuntimeNoun(message string) string {
	return runtimeNouns.FindString(message)
}
