{{/* Labels every object of the release carries. */}}
{{- define "score.labels" -}}
app.kubernetes.io/name: score-orchestrator
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}

{{/* The controllers' Deployments: one running all three, or one each when split. The
ServiceAccount of each is named after it. */}}
{{- define "score.deployments" -}}
{{- if .Values.split }}
deployments:
  - {name: score-orchestrator, controllers: [orchestrator]}
  - {name: score-provisioner, controllers: [provisioner]}
  - {name: score-runtime, controllers: [runtime]}
{{- else }}
deployments:
  - {name: score-controllers, controllers: [orchestrator, provisioner, runtime]}
{{- end }}
{{- end }}

{{- define "score.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}
{{- end }}
