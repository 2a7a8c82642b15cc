{{/*
Names, labels and the checks every template shares.
*/}}

{{- define "bosun.fullname" -}}
{{- if contains "bosun" .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-bosun" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "bosun.selectorLabels" -}}
app.kubernetes.io/name: bosun
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "bosun.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{ include "bosun.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* The roles this release runs: `all`, or `api` and `runner`. */}}
{{- define "bosun.roles" -}}
{{- if .Values.split -}}api runner{{- else -}}all{{- end -}}
{{- end -}}

{{/* Labels of the pods that are cluster runners (roles all and runner). */}}
{{- define "bosun.runnerPodLabels" -}}
{{ include "bosun.selectorLabels" . }}
bosun.dev/runner: "true"
{{- end -}}

{{/* The same, as a label selector string, for the Kubernetes runner health. */}}
{{- define "bosun.runnerSelector" -}}
app.kubernetes.io/name=bosun,app.kubernetes.io/instance={{ .Release.Name }},bosun.dev/runner=true
{{- end -}}

{{- define "bosun.sandboxNamespace" -}}
{{- .Values.platformContainer.namespace | default .Release.Namespace -}}
{{- end -}}

{{/*
How long a graceful stop may take after SIGTERM, in seconds (effect 4.1.0 defaults; Server.ts and
packages/actors set none of them):
- the preStop sleep (shutdown.preStopSleepSeconds);
- the HTTP server drains open requests and SSE streams for at most 20 s (NodeHttpServer's
  gracefulShutdownTimeout), then interrupts them;
- the runner hands its shards over: each entity gets at most 15 s to finish
  (ShardingConfig.entityTerminationTimeout) before it is interrupted; a workflow resumes on another
  runner from its last recorded activity (an execute chunk, at most 2 min, is interrupted and its
  stream resumed with after=, not waited for);
- 5 s to release the shard locks, unregister the runner and close the pools.
A pod killed before that leaves its shards locked for BOSUN_SHARD_LOCK_EXPIRATION and its attempts
to the Scheduler's lease (BOSUN_ATTEMPT_LEASE, 90 s): the grace period must be longer.
*/}}
{{- define "bosun.handoverSeconds" -}}
{{- add (int .Values.shutdown.preStopSleepSeconds) 20 15 5 -}}
{{- end -}}

{{/* Fails the render with a message when the values cannot make a working deployment. */}}
{{- define "bosun.validate" -}}
{{- range $role := splitList " " (include "bosun.roles" .) -}}
{{- $replicas := int (index $.Values $role).replicas -}}
{{- if lt $replicas 1 -}}
{{- fail (printf "%s.replicas must be at least 1 (got %d): a release with no %s pods serves nothing; uninstall it instead" $role $replicas $role) -}}
{{- end -}}
{{- end -}}
{{- $grace := int .Values.shutdown.terminationGracePeriodSeconds -}}
{{- $handover := int (include "bosun.handoverSeconds" .) -}}
{{- if le $grace $handover -}}
{{- fail (printf "shutdown.terminationGracePeriodSeconds must exceed the graceful stop of %d s (preStop %d s + HTTP drain 20 s + shard hand-over 15 s + 5 s), got %d: a pod killed earlier leaves its shards locked and its attempts waiting for their lease" $handover (int .Values.shutdown.preStopSleepSeconds) $grace) -}}
{{- end -}}
{{- if and .Values.runtime.url (not .Values.runtime.tokenSecretName) -}}
{{- fail "runtime.tokenSecretName is required when runtime.url is set: the Secret holding the token the runtime was started with" -}}
{{- end -}}
{{- if and .Values.ingress.enabled (not .Values.ingress.host) -}}
{{- fail "ingress.host is required when ingress.enabled is true" -}}
{{- end -}}
{{- end -}}

{{/* A secretKeyRef env entry: name, secret, key, optional. */}}
{{- define "bosun.secretEnv" -}}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ .secret | quote }}
      key: {{ .key | quote }}
      {{- if .optional }}
      optional: true
      {{- end }}
{{- end -}}
