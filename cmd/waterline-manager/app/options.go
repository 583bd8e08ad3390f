/*
Copyright The Waterline Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package app

import (
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/waterline-dev/waterline/pkg/cmdutil"
	"github.com/waterline-dev/waterline/pkg/manager/webhook/configuration"
	"github.com/waterline-dev/waterline/pkg/manager/webhook/quota"
)

// Options are waterline-manager's flags.
type Options struct {
	// Kubeconfig is the kubeconfig to reach the API server; empty uses the
	// in-cluster config.
	Kubeconfig string
	// KubeAPIQPS and KubeAPIBurst limit the manager's requests to the API
	// server (reads come from its cache; these are its writes: NodeMetric
	// creation and spec, tier allocatable on Node status). QPS > 0, burst
	// ≥ 1. Defaults 50 and 100, kube-scheduler's: client-go's own 5/10
	// let a 5,000-node cluster wait about 17 minutes for its NodeMetrics
	// and fell behind the tier updates of a busy fleet
	// (test/bench/controlplane/README.md).
	KubeAPIQPS   float32
	KubeAPIBurst int
	// MetricsBindAddress serves Prometheus /metrics; "0" disables it.
	// Default :8443.
	MetricsBindAddress string
	// MetricsSecure serves /metrics over HTTPS, only to callers whose
	// bearer token the API server authenticates and who may get /metrics
	// (TokenReview and SubjectAccessReview; pkg/securemetrics). Default
	// true.
	MetricsSecure bool
	// MetricsCertDir holds tls.crt and tls.key for the secure /metrics,
	// read again when they change; empty: a certificate the manager signs
	// itself at start.
	MetricsCertDir string
	// HealthProbeBindAddress serves /healthz and /readyz.
	HealthProbeBindAddress string
	// LeaderElect makes replicas elect one active manager.
	LeaderElect bool
	// LeaderElectionNamespace holds the election Lease; empty uses the
	// namespace the manager runs in.
	LeaderElectionNamespace string
	// LeaseDuration, RenewDeadline and RetryPeriod tune leader election.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Webhooks turns the admission webhook server on.
	Webhooks bool
	// WebhookPort and WebhookCertDir configure it; the directory holds
	// tls.crt and tls.key.
	WebhookPort    int
	WebhookCertDir string
	// WebhookHost is the address the webhook server binds; empty binds all.
	WebhookHost string
	// ColocationWebhookFailOpen admits pods unchanged (with a warning) when
	// the colocation-profile webhook cannot read its inputs; by default it
	// refuses them. Set the webhook configuration's failurePolicy to match.
	ColocationWebhookFailOpen bool
	// PriorityQuotaClasses turns on the priority-class quota webhook for these
	// PriorityClasses: their pods are admitted only in namespaces with a
	// ResourceQuota scoped to the class
	// (docs/design/preemption.md#quota-per-priorityclass).
	PriorityQuotaClasses []string
	// PriorityQuotaAllClasses turns it on for every PriorityClass.
	PriorityQuotaAllClasses bool
	// AgentEvictionWebhook serves the webhook that lets an agent evict
	// only pods of its own node.
	AgentEvictionWebhook bool
	// DaemonSetPriorityClass, when set, serves the webhook that gives
	// DaemonSets without a priority class or priority this class on their
	// pod template (pkg/manager/webhook/daemonset).
	DaemonSetPriorityClass string
	// Controllers lists the controllers to run; "*" runs all.
	Controllers []string

	// Webhook certificate and configurations (see WebhookOptions).
	WebhookOptions
}

// WebhookOptions say how the manager keeps its serving certificate and
// its webhook configurations.
type WebhookOptions struct {
	// WebhookNamespace is the manager's namespace: the certificate Secret
	// and the Service live there, and its pods never reach the webhooks.
	WebhookNamespace string
	// WebhookCertMode is "files" (tls.crt and tls.key are put in the
	// directory by somebody else; ca.crt, when there, is published as the
	// CA bundle) or "secret" (the manager generates, renews and shares
	// them through WebhookCertSecret).
	WebhookCertMode     string
	WebhookCertSecret   string
	WebhookCertValidity time.Duration
	// WebhookURL (https://host:port) or WebhookService (a Service in
	// WebhookNamespace) is where the API server reaches the webhooks.
	WebhookURL     string
	WebhookService string
	// WebhookExcludedNamespaces never reach the webhooks (besides
	// WebhookNamespace).
	WebhookExcludedNamespaces []string
	// ColocationWebhookConfiguration names the MutatingWebhookConfiguration
	// the manager fills with one entry per colocation profile; empty
	// leaves webhook configurations to somebody else.
	ColocationWebhookConfiguration string
	// ColocationWebhookFailurePolicy is Fail or Ignore for the pods a
	// profile selects; Ignore also admits pods unchanged when the handler
	// cannot read its inputs.
	ColocationWebhookFailurePolicy string
	ColocationWebhookTimeout       time.Duration
	// CABundleConfigurations get the CA bundle too
	// (mutating/<name> or validating/<name>).
	CABundleConfigurations []string
}

// QuotaConfig is the priority-class quota webhook's configuration, and
// whether it is on.
func (o *Options) QuotaConfig() (quota.Config, bool) {
	c := quota.Config{PriorityClasses: o.PriorityQuotaClasses, AllPriorityClasses: o.PriorityQuotaAllClasses}
	return c, len(c.PriorityClasses) > 0 || c.AllPriorityClasses
}

// Controller names for --controllers.
const (
	ControllerNodeMetric = "nodemetric"
	ControllerTiers      = "tiers"
	ControllerNodeQOS    = "nodeqos"
	ControllerPolicy     = "colocationpolicy"
)

var knownControllers = []string{ControllerNodeMetric, ControllerTiers, ControllerNodeQOS, ControllerPolicy}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		KubeAPIQPS:             50,
		KubeAPIBurst:           100,
		MetricsBindAddress:     ":8443",
		MetricsSecure:          true,
		HealthProbeBindAddress: ":8081",
		LeaderElect:            true,
		LeaseDuration:          15 * time.Second,
		RenewDeadline:          10 * time.Second,
		RetryPeriod:            2 * time.Second,
		Webhooks:               true,
		WebhookPort:            9443,
		WebhookCertDir:         "/tmp/k8s-webhook-server/serving-certs",
		Controllers:            []string{"*"},
		WebhookOptions: WebhookOptions{
			WebhookNamespace:               os.Getenv("POD_NAMESPACE"),
			WebhookCertMode:                "files",
			WebhookCertSecret:              "waterline-webhook-certs",
			WebhookCertValidity:            365 * 24 * time.Hour,
			ColocationWebhookFailurePolicy: "Fail",
			ColocationWebhookTimeout:       5 * time.Second,
			WebhookExcludedNamespaces:      []string{"kube-system"},
		},
	}
}

// AddFlags binds the options to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Path to a kubeconfig; empty uses the in-cluster configuration.")
	fs.Float32Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS, "Requests per second to the API server (> 0).")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "Burst of requests to the API server (≥ 1).")
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress, "Address of the Prometheus /metrics endpoint; \"0\" disables it.")
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", o.MetricsSecure, "Serve /metrics over HTTPS, only to callers whose bearer token the API server authenticates and who may get /metrics (a ClusterRole rule nonResourceURLs [/metrics], verbs [get]); the manager's ServiceAccount must create tokenreviews and subjectaccessreviews. false serves plain HTTP to anyone who reaches the port.")
	fs.StringVar(&o.MetricsCertDir, "metrics-cert-dir", o.MetricsCertDir, "Directory with tls.crt and tls.key for --metrics-secure, read again when they change; empty: a certificate the manager signs itself at start.")
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", o.HealthProbeBindAddress, "Address of /healthz and /readyz.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Elect one active manager among replicas with a Lease.")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", o.LeaderElectionNamespace, "Namespace of the leader-election Lease; empty uses the manager's own namespace.")
	fs.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", o.LeaseDuration, "How long a non-leader waits before taking over an unrenewed lease.")
	fs.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", o.RenewDeadline, "How long the leader keeps trying to renew before giving up leadership.")
	fs.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", o.RetryPeriod, "How often candidates try to acquire or renew the lease.")
	fs.BoolVar(&o.Webhooks, "webhooks", o.Webhooks, "Serve the admission webhooks (colocation profiles, priority-class quota, DaemonSet priority).")
	fs.StringVar(&o.WebhookHost, "webhook-host", o.WebhookHost, "Address the webhook server binds; empty binds all.")
	fs.IntVar(&o.WebhookPort, "webhook-port", o.WebhookPort, "Port of the webhook server.")
	fs.StringVar(&o.WebhookCertDir, "webhook-cert-dir", o.WebhookCertDir, "Directory with the webhook server's tls.crt and tls.key.")
	fs.BoolVar(&o.ColocationWebhookFailOpen, "colocation-webhook-fail-open", o.ColocationWebhookFailOpen, "Admit pods unchanged, with a warning, when the colocation-profile webhook cannot read the namespace, policy or PriorityClass (default: refuse them). Match the MutatingWebhookConfiguration's failurePolicy.")
	fs.StringSliceVar(&o.PriorityQuotaClasses, "priority-quota-classes", o.PriorityQuotaClasses, "Serve the priority-class quota webhook for these PriorityClasses: their pods are admitted only in namespaces with a ResourceQuota scoped to the class. The chart value webhooks.priorityQuota installs its configuration.")
	fs.BoolVar(&o.PriorityQuotaAllClasses, "priority-quota-all-classes", o.PriorityQuotaAllClasses, "Serve the priority-class quota webhook for every PriorityClass.")
	fs.StringVar(&o.WebhookNamespace, "webhook-namespace", o.WebhookNamespace, "The manager's namespace (default $POD_NAMESPACE): it holds the certificate Secret and the webhook Service, and its pods never reach the webhooks.")
	fs.StringVar(&o.WebhookCertMode, "webhook-cert-mode", o.WebhookCertMode, "files: tls.crt and tls.key in --webhook-cert-dir come from elsewhere (cert-manager), ca.crt there is published as the CA bundle; secret: the manager generates and renews them in --webhook-cert-secret and writes them to --webhook-cert-dir.")
	fs.StringVar(&o.WebhookCertSecret, "webhook-cert-secret", o.WebhookCertSecret, "Secret in --webhook-namespace that holds the generated certificate (--webhook-cert-mode=secret).")
	fs.DurationVar(&o.WebhookCertValidity, "webhook-cert-validity", o.WebhookCertValidity, "Lifetime of a generated certificate; renewed when a third is left (at least 1h).")
	fs.StringVar(&o.WebhookURL, "webhook-url", o.WebhookURL, "Base URL (https://host:port) the API server calls the webhooks at; certificates generated in secret mode are valid for its host.")
	fs.StringVar(&o.WebhookService, "webhook-service", o.WebhookService, "Service in --webhook-namespace the API server calls the webhooks through (port 443), when --webhook-url is empty.")
	fs.StringSliceVar(&o.WebhookExcludedNamespaces, "webhook-excluded-namespaces", o.WebhookExcludedNamespaces, "Namespaces whose pods never reach the colocation-profile webhook (besides --webhook-namespace).")
	fs.StringVar(&o.ColocationWebhookConfiguration, "colocation-webhook-configuration", o.ColocationWebhookConfiguration, "MutatingWebhookConfiguration the manager fills with one entry per colocation profile (it must exist); empty leaves webhook configurations alone.")
	fs.StringVar(&o.ColocationWebhookFailurePolicy, "colocation-webhook-failure-policy", o.ColocationWebhookFailurePolicy, "Fail or Ignore: what happens to pods a profile selects when the manager cannot be reached or cannot read its inputs.")
	fs.DurationVar(&o.ColocationWebhookTimeout, "colocation-webhook-timeout", o.ColocationWebhookTimeout, "How long the API server waits for the colocation-profile webhook (1s-30s).")
	fs.StringSliceVar(&o.CABundleConfigurations, "ca-bundle-configurations", o.CABundleConfigurations, "More webhook configurations (mutating/<name>, validating/<name>) whose CA bundle the manager keeps.")
	fs.BoolVar(&o.AgentEvictionWebhook, "agent-eviction-webhook", o.AgentEvictionWebhook, "Serve the webhook that refuses a waterline-agent's eviction of a pod on another node than its own (its node-bound token's authentication.kubernetes.io/node-name).")
	fs.StringVar(&o.DaemonSetPriorityClass, "daemonset-priority-class", o.DaemonSetPriorityClass, "Serve the webhook that gives DaemonSets naming no priority class and no priority this PriorityClass on their pod template (the chart ships waterline-daemonset), so a new DaemonSet is not preempted en masse; empty does not serve it. The chart value webhooks.daemonSetPriority installs its configuration.")
	fs.StringSliceVar(&o.Controllers, "controllers", o.Controllers, fmt.Sprintf("Controllers to run: * for all, or a list of %v.", knownControllers))
}

// Validate returns every problem with the options, naming the flag.
func (o *Options) Validate() field.ErrorList {
	var errs field.ErrorList
	if o.KubeAPIQPS <= 0 {
		errs = append(errs, field.Invalid(field.NewPath("kube-api-qps"), o.KubeAPIQPS, "must be positive"))
	}
	if o.KubeAPIBurst < 1 {
		errs = append(errs, field.Invalid(field.NewPath("kube-api-burst"), o.KubeAPIBurst, "must be at least 1"))
	}
	for name, addr := range map[string]string{"metrics-bind-address": o.MetricsBindAddress, "health-probe-bind-address": o.HealthProbeBindAddress} {
		if addr == "0" && name == "metrics-bind-address" {
			continue
		}
		if err := cmdutil.ValidateAddress(addr); err != nil {
			errs = append(errs, field.Invalid(field.NewPath(name), addr, err.Error()))
		}
	}
	if o.MetricsCertDir != "" && (!o.MetricsSecure || o.MetricsBindAddress == "0") {
		errs = append(errs, field.Invalid(field.NewPath("metrics-cert-dir"), o.MetricsCertDir, "needs --metrics-secure and a --metrics-bind-address"))
	}
	if o.LeaderElect {
		if o.LeaseDuration <= o.RenewDeadline {
			errs = append(errs, field.Invalid(field.NewPath("leader-elect-lease-duration"), o.LeaseDuration.String(), "must be longer than --leader-elect-renew-deadline"))
		}
		if o.RenewDeadline <= o.RetryPeriod {
			errs = append(errs, field.Invalid(field.NewPath("leader-elect-renew-deadline"), o.RenewDeadline.String(), "must be longer than --leader-elect-retry-period"))
		}
		if o.RetryPeriod <= 0 {
			errs = append(errs, field.Invalid(field.NewPath("leader-elect-retry-period"), o.RetryPeriod.String(), "must be positive"))
		}
	}
	if o.Webhooks {
		if o.WebhookPort < 1 || o.WebhookPort > 65535 {
			errs = append(errs, field.Invalid(field.NewPath("webhook-port"), o.WebhookPort, "must be a port number (1-65535)"))
		}
		errs = append(errs, o.validateWebhooks()...)
	}
	if o.DaemonSetPriorityClass != "" && !o.Webhooks {
		errs = append(errs, field.Invalid(field.NewPath("webhooks"), false, "must be true with --daemonset-priority-class"))
	}
	if o.DaemonSetPriorityClass != "" {
		for _, msg := range validation.IsDNS1123Subdomain(o.DaemonSetPriorityClass) {
			errs = append(errs, field.Invalid(field.NewPath("daemonset-priority-class"), o.DaemonSetPriorityClass, msg))
		}
	}
	if o.AgentEvictionWebhook && !o.Webhooks {
		errs = append(errs, field.Invalid(field.NewPath("webhooks"), false, "must be true with --agent-eviction-webhook"))
	}
	if qc, on := o.QuotaConfig(); on {
		if !o.Webhooks {
			errs = append(errs, field.Invalid(field.NewPath("webhooks"), false, "must be true when --priority-quota-classes or --priority-quota-all-classes is set"))
		}
		for _, e := range qc.Validate(nil) {
			// Name the flags, not the config fields.
			e.Field = strings.NewReplacer("priorityClasses", "priority-quota-classes", "allPriorityClasses", "priority-quota-all-classes").Replace(e.Field)
			errs = append(errs, e)
		}
	}
	for i, c := range o.Controllers {
		if c == "*" || contains(knownControllers, c) {
			continue
		}
		errs = append(errs, field.NotSupported(field.NewPath("controllers").Index(i), c, append([]string{"*"}, knownControllers...)))
	}
	return errs
}

// Enabled reports whether the named controller runs.
func (o *Options) Enabled(name string) bool {
	return contains(o.Controllers, "*") || contains(o.Controllers, name)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func (o *Options) validateWebhooks() field.ErrorList {
	var errs field.ErrorList
	switch o.WebhookCertMode {
	case "files":
		for _, f := range []string{"tls.crt", "tls.key"} {
			if _, err := os.Stat(o.WebhookCertDir + "/" + f); err != nil {
				errs = append(errs, field.Invalid(field.NewPath("webhook-cert-dir"), o.WebhookCertDir, fmt.Sprintf("has no readable %s (%v); pass --webhooks=false to run without webhooks, or --webhook-cert-mode=secret", f, err)))
			}
		}
	case "secret":
		if o.WebhookNamespace == "" {
			errs = append(errs, field.Required(field.NewPath("webhook-namespace"), "the certificate Secret's namespace (or $POD_NAMESPACE) is needed with --webhook-cert-mode=secret"))
		}
		if o.WebhookCertSecret == "" {
			errs = append(errs, field.Required(field.NewPath("webhook-cert-secret"), "needed with --webhook-cert-mode=secret"))
		}
		if o.WebhookCertValidity < time.Hour {
			errs = append(errs, field.Invalid(field.NewPath("webhook-cert-validity"), o.WebhookCertValidity.String(), "must be at least 1h"))
		}
		if o.WebhookURL == "" && o.WebhookService == "" {
			errs = append(errs, field.Required(field.NewPath("webhook-url"), "--webhook-url or --webhook-service names the host the generated certificate is for"))
		}
	default:
		errs = append(errs, field.NotSupported(field.NewPath("webhook-cert-mode"), o.WebhookCertMode, []string{"files", "secret"}))
	}
	if o.WebhookURL != "" {
		if u, err := url.Parse(o.WebhookURL); err != nil || u.Scheme != "https" || u.Host == "" || (u.Path != "" && u.Path != "/") {
			errs = append(errs, field.Invalid(field.NewPath("webhook-url"), o.WebhookURL, "must be https://host[:port] without a path"))
		}
	}
	if o.ColocationWebhookConfiguration != "" {
		if o.WebhookURL == "" && (o.WebhookService == "" || o.WebhookNamespace == "") {
			errs = append(errs, field.Required(field.NewPath("webhook-url"), "--webhook-url, or --webhook-service with --webhook-namespace, is needed with --colocation-webhook-configuration"))
		}
	}
	if p := o.ColocationWebhookFailurePolicy; p != "Fail" && p != "Ignore" {
		errs = append(errs, field.NotSupported(field.NewPath("colocation-webhook-failure-policy"), p, []string{"Fail", "Ignore"}))
	}
	if t := o.ColocationWebhookTimeout; t < time.Second || t > 30*time.Second {
		errs = append(errs, field.Invalid(field.NewPath("colocation-webhook-timeout"), t.String(), "must be within 1s-30s"))
	}
	for i, c := range o.CABundleConfigurations {
		if _, err := configuration.ParseTarget(c); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("ca-bundle-configurations").Index(i), c, err.Error()))
		}
	}
	return errs
}
