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

{{/* "true" when the manager serves admission webhooks (any is on). */}}
{{- define "waterline.servesWebhooks" -}}
{{- $agentScope := and .Values.agent.enabled .Values.agent.nodeScoped -}}
{{- if or .Values.webhooks.colocation.enabled .Values.webhooks.priorityQuota.enabled $agentScope .Values.webhooks.daemonSetPriority.enabled -}}
true
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

{{/*
waterline.validateNodeQOS stops the render when nodeQOS.spec's lines are out
of the order the NodeQOS CRD's rules require, naming the value: the API
server would refuse the object, but only after helm had created everything
before it. The CRD (config/crd, spec.cpu and spec.memory) is the authority;
these are its ordering rules, in the same words.
*/}}
{{- define "waterline.validateNodeQOS" -}}
{{- $cpu := .cpu | default dict -}}
{{- $mem := .memory | default dict -}}
{{- $f := "nodeQOS.spec.cpu" -}}
{{- if and (hasKey $cpu "evictPercent") (hasKey $cpu "throttlePercent") -}}
{{- if le (int $cpu.evictPercent) (int $cpu.throttlePercent) -}}
{{- fail (printf "%s.evictPercent (%v): evictPercent must be greater than throttlePercent (%v)" $f $cpu.evictPercent $cpu.throttlePercent) -}}
{{- end -}}
{{- end -}}
{{- if and (hasKey $cpu "throttlePercent") (hasKey $cpu "forbidSchedulingPercent") -}}
{{- if lt (int $cpu.throttlePercent) (int $cpu.forbidSchedulingPercent) -}}
{{- fail (printf "%s.throttlePercent (%v): throttlePercent must be at least forbidSchedulingPercent (%v)" $f $cpu.throttlePercent $cpu.forbidSchedulingPercent) -}}
{{- end -}}
{{- end -}}
{{- if and (hasKey $cpu "evictPercent") (hasKey $cpu "forbidSchedulingPercent") -}}
{{- if le (int $cpu.evictPercent) (int $cpu.forbidSchedulingPercent) -}}
{{- fail (printf "%s.evictPercent (%v): evictPercent must be greater than forbidSchedulingPercent (%v)" $f $cpu.evictPercent $cpu.forbidSchedulingPercent) -}}
{{- end -}}
{{- end -}}
{{- if hasKey $cpu "restorePercent" -}}
{{- if not (hasKey $cpu "throttlePercent") -}}
{{- fail (printf "%s.restorePercent (%v): restorePercent needs throttlePercent and must not be above it" $f $cpu.restorePercent) -}}
{{- else if gt (int $cpu.restorePercent) (int $cpu.throttlePercent) -}}
{{- fail (printf "%s.restorePercent (%v): restorePercent needs throttlePercent and must not be above it (%v)" $f $cpu.restorePercent $cpu.throttlePercent) -}}
{{- end -}}
{{- end -}}
{{- if and (hasKey $mem "evictPercent") (hasKey $mem "forbidSchedulingPercent") -}}
{{- if le (int $mem.evictPercent) (int $mem.forbidSchedulingPercent) -}}
{{- fail (printf "nodeQOS.spec.memory.evictPercent (%v): evictPercent must be greater than forbidSchedulingPercent (%v)" $mem.evictPercent $mem.forbidSchedulingPercent) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The rules of a component serving a secure /metrics (secureMetrics): who
a scraper is and whether it may get /metrics. */}}
{{- define "waterline.metricsAuthRules" -}}
- apiGroups: ["authentication.k8s.io"]
  resources: ["tokenreviews"]
  verbs: ["create"]
- apiGroups: ["authorization.k8s.io"]
  resources: ["subjectaccessreviews"]
  verbs: ["create"]
{{- end -}}
