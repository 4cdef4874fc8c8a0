package v1b1

// Labels, annotations and finalizers shared by every controller. Internal objects carry
// LabelWorkload and an OwnerReference (controller=true) to their Workload.
const (
	// LabelWorkload names the Workload an internal object belongs to.
	LabelWorkload = "score.dev/workload"
	// LabelConsumerPrefix, followed by a claimed instance's identity hash, marks the pods of
	// the Workloads that consume the instance (value "true"); the instance's NetworkPolicy
	// admits them.
	LabelConsumerPrefix = "consumer.score.dev/"
	// LabelSecretsRevision on a Workload's pods changes whenever one of the outputs Secrets
	// it consumes is rewritten or replaced, so the pods roll and read the new values.
	LabelSecretsRevision = "score.dev/secrets-revision"

	// AnnotationProfile is the user's abstract profile hint (for example "web-service").
	AnnotationProfile = "score.dev/profile"
	// AnnotationRequirements lists abstract features the Workload needs, as a JSON array or a
	// comma-separated list (for example ["scale-to-zero"]).
	AnnotationRequirements = "score.dev/requirements"
	// AnnotationDeprovisionPolicy on a Score resource's metadata overrides the claim's
	// deprovision policy (Delete, Retain or Orphan).
	AnnotationDeprovisionPolicy = "score.dev/deprovision-policy"

	// AnnotationScoreMetadata keeps Score metadata keys that have no Kubernetes counterpart
	// (everything but name, annotations and labels) as JSON, so a conversion round-trips.
	AnnotationScoreMetadata = "score.dev/score-metadata"
	// AnnotationFileSources records, as JSON, the original files[].source of files the
	// converter inlined, keyed by "<container>:<target>", so a conversion round-trips.
	AnnotationFileSources = "score.dev/file-sources"

	// AnnotationReconcileRequestedAt, set to any new value on a Workload, makes every
	// controller involved process it again; the value is echoed in
	// status.lastHandledReconcileAt.
	AnnotationReconcileRequestedAt = "score.dev/reconcile-requested-at"

	// AnnotationWorkloadUID marks every object the runtime applies with the UID of the
	// Workload it belongs to; an object marked for another Workload is never taken over.
	AnnotationWorkloadUID = "score.dev/workload-uid"
	// AnnotationApplied is the digest of what the controllers last applied to an object (a
	// Secret's key names, not its values): a field dropped from the rendered object changes
	// it, so the object is applied again and the field removed, where comparing the fields
	// rendered with the live object would not see it.
	AnnotationApplied = "score.dev/applied"
	// LabelInstance marks every object a provisioner applies (and the instance's state
	// Secret) with the identity hash of the instance it belongs to.
	LabelInstance = "score.dev/instance"
	// LabelShard on a Workload assigns it to a shard: the controller instances started with
	// --watch-label-selector=score.dev/shard=NAME own it, and the instance started with
	// !score.dev/shard owns the unlabelled rest (Flux's convention). The orchestrator copies
	// it onto the Workload's claims, plan and exposure, so they follow their Workload.
	LabelShard = "score.dev/shard"
	// LabelRunOf marks a run (an immutable object named after its inputs: a batch Job, a
	// build) with what it is a run of; the earlier runs with the same value are its history.
	LabelRunOf = "score.dev/run-of"
	// LabelSecretType with the value SecretTypeCluster marks a Secret of the control plane's
	// namespace as a member cluster's registration (Argo CD's and Istio's convention): its
	// name is the cluster's name, its other labels are the cluster's labels, its data the
	// connection (a kubeconfig, or server, ca.crt and token).
	LabelSecretType   = "score.dev/secret-type"
	SecretTypeCluster = "cluster"
	// LabelPreview marks a namespace as a preview environment (scorectl preview up), with
	// the preview's name as its value. The control plane deletes a preview namespace — its
	// Workloads first, then the namespace — when it expires; only a namespace whose name is
	// PreviewNamespacePrefix followed by that value is one.
	LabelPreview = "score.dev/preview"
	// LabelPreviewOf on a preview namespace names the namespace it previews (its maker's
	// word: scorectl preview up copies that namespace's labels, the platform's restrictions
	// among them).
	LabelPreviewOf = "score.dev/preview-of"
	// AnnotationPreviewMaker on a preview namespace is the user who created it, as the API
	// server names them (scorectl preview up asks with a SelfSubjectReview). The admission
	// policy score-preview-makers holds it to the creator's name and lets only the maker or a
	// platform administrator change the preview afterwards; the platform's limit on previews
	// counts them by it.
	AnnotationPreviewMaker = "score.dev/preview-maker"
	// AnnotationPreviewExpires on a preview namespace is when it expires (RFC 3339); without
	// it, the config's previews.defaultTTL after its creation. No preview outlives
	// previews.maxTTL after its creation.
	AnnotationPreviewExpires = "score.dev/preview-expires"
	// PreviewNamespacePrefix starts the name of every preview namespace.
	PreviewNamespacePrefix = "preview-"
	// AnnotationHistoryLimit on a run says how many runs to keep, itself included.
	AnnotationHistoryLimit = "score.dev/history-limit"

	// FieldManagerRuntime and FieldManagerProvisioner are the server-side apply field managers
	// of what the runtime and the provisioner apply.
	FieldManagerRuntime     = "score-runtime"
	FieldManagerProvisioner = "score-provisioner"

	// RuntimeClassKubernetes is the runtime class the Kubernetes runtime serves.
	RuntimeClassKubernetes = "kubernetes"
	// RuntimeClassDocker is the runtime class the Docker runtime serves: its agent runs the
	// plans placed on its Docker host.
	RuntimeClassDocker = "docker"

	// LabelComposeFragment marks the Secret in which a definition in score-compose's format
	// leaves its instance's Compose services, volumes and files (ComposeFragmentKey, JSON) for
	// the Docker agent serving the namespace.
	LabelComposeFragment = "docker.score.dev/fragment"
	ComposeFragmentKey   = "fragment.json"

	// WorkloadFinalizer orders deletion: claims are deprovisioned before the Workload goes.
	WorkloadFinalizer = "workloads.score.dev/finalizer"

	// ClaimFinalizer holds a claim until the provisioner has released what it provisioned,
	// per the claim's policy. The orchestrator creates claims with it (the provisioner adding
	// it would cost a write per claim); the provisioner adds it to a claim that lacks it.
	ClaimFinalizer = "resourceclaims.score.dev/provisioner"
	// PlanFinalizer holds a plan that applied cluster-scoped objects until the runtime deleted
	// them: owner references cannot cross scopes, so garbage collection would not.
	PlanFinalizer = "workloadplans.score.dev/runtime"
)
