{{/* The release's full name, within the 63 characters of a name. */}}
{{- define "trellis.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "trellis.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: operator
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "trellis.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end -}}

{{- define "trellis.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "trellis.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "trellis.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/*
The namespaces the operator reconciles, comma-separated: empty for every
namespace; "-" stands for the release's own.
*/}}
{{- define "trellis.watchNamespace" -}}
{{- $names := list -}}
{{- range (splitList "," .Values.watchNamespace) -}}
{{- $name := trim . -}}
{{- if eq $name "-" -}}
{{- $names = append $names $.Release.Namespace -}}
{{- else if ne $name "" -}}
{{- $names = append $names $name -}}
{{- end -}}
{{- end -}}
{{- join "," (uniq $names) -}}
{{- end -}}

{{/*
The operator's rules: a ClusterRole's, or a Role's in each watched
namespace.
*/}}
{{- define "trellis.operatorRules" -}}
rules:
  - apiGroups: [trellis.dev]
    resources: [indexprofiles, corpora, retrievalroutes]
    verbs: [get, list, watch]
  - apiGroups: [trellis.dev]
    resources: [indexprofiles/status, corpora/status, retrievalroutes/status]
    verbs: [get, patch, update]
  - apiGroups: [batch]
    resources: [jobs]
    verbs: [get, list, watch, create, patch, delete]
  - apiGroups: [""]
    resources: [configmaps]
    verbs: [get, list, watch, create, patch, update, delete, deletecollection]
  # Pods and Events are read, never written: why an ingest's pod cannot
  # run (unschedulable, OOMKilled, a quota) reaches the Corpus status.
  - apiGroups: [""]
    resources: [pods, events]
    verbs: [get, list, watch]
  # A data claim's access modes decide where its pods may run.
  - apiGroups: [""]
    resources: [persistentvolumeclaims]
    verbs: [get]
  # Secrets' metadata, never their data (the operator asks for metadata
  # only; RBAC cannot say so): a rotated Secret a route's pods read rolls
  # them.
  - apiGroups: [""]
    resources: [secrets]
    verbs: [get, list, watch]
  - apiGroups: [""]
    resources: [serviceaccounts, services]
    verbs: [get, create, patch, delete]
  - apiGroups: [apps]
    resources: [deployments]
    verbs: [get, list, watch, create, patch]
  # A route's Deployment that an autoscaler scales keeps the replica
  # count the autoscaler set.
  - apiGroups: [autoscaling]
    resources: [horizontalpodautoscalers]
    verbs: [list]
  - apiGroups: [policy]
    resources: [poddisruptionbudgets]
    verbs: [get, create, patch, delete]
  - apiGroups: [networking.k8s.io]
    resources: [networkpolicies]
    verbs: [get, create, patch, delete]
  - apiGroups: [rbac.authorization.k8s.io]
    resources: [roles, rolebindings]
    verbs: [get, create, patch]
  - apiGroups: [events.k8s.io]
    resources: [events]
    verbs: [create, patch]
{{- end -}}
