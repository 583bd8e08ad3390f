{{/*
Waterline is a cluster-wide add-on: one release per cluster. Object names
are fixed (waterline-manager, waterline-scheduler, ...) because other parts
refer to them: pods name the scheduler, PriorityClasses are a contract, the
agent's admission policy names its ServiceAccount.
*/}}

{{- define "waterline.labels" -}}
app.kubernetes.io/part-of: waterline
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "waterline.selector" -}}
app.kubernetes.io/name: {{ . }}
app.kubernetes.io/part-of: waterline
{{- end -}}

{{/* image: (dict "root" $ "image" .Values.manager.image) */}}
{{- define "waterline.image" -}}
{{- $registry := .root.Values.image.registry -}}
{{- $tag := .image.tag | default .root.Values.image.tag | default .root.Chart.AppVersion -}}
{{- if $registry -}}
{{- printf "%s/%s:%s" $registry .image.repository $tag -}}
{{- else -}}
{{- printf "%s:%s" .image.repository $tag -}}
{{- end -}}
{{- end -}}

{{/* The host servers bind and probes call: loopback on a local cluster. */}}
{{- define "waterline.bindHost" -}}
{{- if .Values.localCluster.enabled -}}127.0.0.1{{- end -}}
{{- end -}}

{{/* The webhook clientConfig base: a URL on a local cluster, else the Service. */}}
{{- define "waterline.webhookURL" -}}
{{- if .Values.webhooks.url -}}
{{- .Values.webhooks.url | trimSuffix "/" -}}
{{- else if .Values.localCluster.enabled -}}
{{- printf "https://127.0.0.1:%d" (int .Values.manager.ports.webhook) -}}
{{- end -}}
{{- end -}}

{{/* Namespaces whose pods never go through Waterline's webhooks. */}}
{{- define "waterline.webhookExcludedNamespaces" -}}
{{- $ns := list "kube-system" .Release.Namespace -}}
{{- range .Values.webhooks.excludedNamespaces -}}{{- $ns = append $ns . -}}{{- end -}}
{{- $ns | uniq | toJson -}}
{{- end -}}

{{- define "waterline.podAntiAffinity" -}}
podAntiAffinity:
  preferredDuringSchedulingIgnoredDuringExecution:
  - weight: 100
    podAffinityTerm:
      topologyKey: kubernetes.io/hostname
      labelSelector:
        matchLabels:
          app.kubernetes.io/name: {{ . }}
{{- end -}}

{{/* Env of every Waterline container: the API server on a local cluster without kube-proxy. */}}
{{- define "waterline.apiServerEnv" -}}
{{- if and .Values.localCluster.enabled .Values.localCluster.apiServer.host }}
- name: KUBERNETES_SERVICE_HOST
  value: {{ .Values.localCluster.apiServer.host | quote }}
- name: KUBERNETES_SERVICE_PORT
  value: {{ .Values.localCluster.apiServer.port | quote }}
{{- end }}
{{- end -}}
