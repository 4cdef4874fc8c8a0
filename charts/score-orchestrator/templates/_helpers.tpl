{{/* Labels every object of the release carries. */}}
{{- define "score.labels" -}}
app.kubernetes.io/name: score-orchestrator
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}

{{/* The controllers' Deployments: one running all four, or one each when split, each with a
ServiceAccount named after it; with shards, each that runs a shard's controllers again per
shard (named after it, under the same ServiceAccount, without the rollout), the first owning
the unlabelled Workloads. The rollout is the fleet's: it runs in the first Deployments only
(score-controllers, or score-rollout when split), under a lease of its own. */}}
{{- define "score.deployments" -}}
{{- $base := list (dict "name" "score-controllers" "controllers" (list "orchestrator" "provisioner" "runtime" "rollout")) }}
{{- if .Values.split }}
{{- $base = list (dict "name" "score-orchestrator" "controllers" (list "orchestrator")) (dict "name" "score-provisioner" "controllers" (list "provisioner")) (dict "name" "score-runtime" "controllers" (list "runtime")) (dict "name" "score-rollout" "controllers" (list "rollout")) }}
{{- end }}
deployments:
{{- range $b := $base }}
  {{- $sharded := without $b.controllers "rollout" }}
  - name: {{ $b.name }}
    serviceAccount: {{ $b.name }}
    controllers: {{ toJson $b.controllers }}
    {{- if and $.Values.shards $sharded }}
    selector: "!score.dev/shard"
    {{- end }}
  {{- if $sharded }}
  {{- range $s := $.Values.shards }}
  - name: {{ printf "%s-%s" $b.name $s }}
    serviceAccount: {{ $b.name }}
    controllers: {{ toJson $sharded }}
    selector: {{ printf "score.dev/shard=%s" $s | quote }}
    shard: {{ $s | quote }}
  {{- end }}
  {{- end }}
{{- end }}
{{- end }}

{{- define "score.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}
{{- end }}
