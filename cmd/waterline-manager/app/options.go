package app

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/waterline-dev/waterline/pkg/cmdutil"
	"github.com/waterline-dev/waterline/pkg/manager/webhook/quota"
)

// Options are waterline-manager's flags.
type Options struct {
	// Kubeconfig is the kubeconfig to reach the API server; empty uses the
	// in-cluster config.
	Kubeconfig string
	// MetricsBindAddress serves Prometheus /metrics; "0" disables it.
	MetricsBindAddress string
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
	// PriorityQuotaClasses turns on the priority-class quota webhook for
	// these PriorityClasses: their pods are admitted only in namespaces with
	// a ResourceQuota scoped to the class (seed 004).
	PriorityQuotaClasses []string
	// PriorityQuotaAllClasses turns it on for every PriorityClass.
	PriorityQuotaAllClasses bool
	// Controllers lists the controllers to run; "*" runs all.
	Controllers []string
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
)

var knownControllers = []string{ControllerNodeMetric, ControllerTiers, ControllerNodeQOS}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		MetricsBindAddress:     ":8080",
		HealthProbeBindAddress: ":8081",
		LeaderElect:            true,
		LeaseDuration:          15 * time.Second,
		RenewDeadline:          10 * time.Second,
		RetryPeriod:            2 * time.Second,
		Webhooks:               true,
		WebhookPort:            9443,
		WebhookCertDir:         "/tmp/k8s-webhook-server/serving-certs",
		Controllers:            []string{"*"},
	}
}

// AddFlags binds the options to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Path to a kubeconfig; empty uses the in-cluster configuration.")
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress, "Address of the Prometheus /metrics endpoint; \"0\" disables it.")
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", o.HealthProbeBindAddress, "Address of /healthz and /readyz.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Elect one active manager among replicas with a Lease.")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", o.LeaderElectionNamespace, "Namespace of the leader-election Lease; empty uses the manager's own namespace.")
	fs.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", o.LeaseDuration, "How long a non-leader waits before taking over an unrenewed lease.")
	fs.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", o.RenewDeadline, "How long the leader keeps trying to renew before giving up leadership.")
	fs.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", o.RetryPeriod, "How often candidates try to acquire or renew the lease.")
	fs.BoolVar(&o.Webhooks, "webhooks", o.Webhooks, "Serve the admission webhooks (colocation profiles, priority-class quota).")
	fs.StringVar(&o.WebhookHost, "webhook-host", o.WebhookHost, "Address the webhook server binds; empty binds all.")
	fs.IntVar(&o.WebhookPort, "webhook-port", o.WebhookPort, "Port of the webhook server.")
	fs.StringVar(&o.WebhookCertDir, "webhook-cert-dir", o.WebhookCertDir, "Directory with the webhook server's tls.crt and tls.key.")
	fs.BoolVar(&o.ColocationWebhookFailOpen, "colocation-webhook-fail-open", o.ColocationWebhookFailOpen, "Admit pods unchanged, with a warning, when the colocation-profile webhook cannot read the namespace, policy or PriorityClass (default: refuse them). Match the MutatingWebhookConfiguration's failurePolicy.")
	fs.StringSliceVar(&o.PriorityQuotaClasses, "priority-quota-classes", o.PriorityQuotaClasses, "Serve the priority-class quota webhook for these PriorityClasses: their pods are admitted only in namespaces with a ResourceQuota scoped to the class. Apply config/webhook/priority-quota/ with it.")
	fs.BoolVar(&o.PriorityQuotaAllClasses, "priority-quota-all-classes", o.PriorityQuotaAllClasses, "Serve the priority-class quota webhook for every PriorityClass.")
	fs.StringSliceVar(&o.Controllers, "controllers", o.Controllers, fmt.Sprintf("Controllers to run: * for all, or a list of %v.", knownControllers))
}

// Validate returns every problem with the options, naming the flag.
func (o *Options) Validate() field.ErrorList {
	var errs field.ErrorList
	for name, addr := range map[string]string{"metrics-bind-address": o.MetricsBindAddress, "health-probe-bind-address": o.HealthProbeBindAddress} {
		if addr == "0" && name == "metrics-bind-address" {
			continue
		}
		if err := cmdutil.ValidateAddress(addr); err != nil {
			errs = append(errs, field.Invalid(field.NewPath(name), addr, err.Error()))
		}
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
		for _, f := range []string{"tls.crt", "tls.key"} {
			if _, err := os.Stat(o.WebhookCertDir + "/" + f); err != nil {
				errs = append(errs, field.Invalid(field.NewPath("webhook-cert-dir"), o.WebhookCertDir, fmt.Sprintf("has no readable %s (%v); pass --webhooks=false to run without webhooks", f, err)))
			}
		}
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
