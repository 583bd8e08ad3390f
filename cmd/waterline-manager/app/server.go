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

// Package app builds the waterline-manager command.
package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/cmdutil"
	"github.com/waterline-dev/waterline/pkg/manager/nodemetric"
	"github.com/waterline-dev/waterline/pkg/manager/nodeqos"
	"github.com/waterline-dev/waterline/pkg/manager/nodetiers"
	"github.com/waterline-dev/waterline/pkg/manager/policystatus"
	"github.com/waterline-dev/waterline/pkg/manager/webhook/agentscope"
	"github.com/waterline-dev/waterline/pkg/manager/webhook/daemonset"
	"github.com/waterline-dev/waterline/pkg/manager/webhook/probe"
	"github.com/waterline-dev/waterline/pkg/manager/webhook/profile"
	"github.com/waterline-dev/waterline/pkg/manager/webhook/quota"
	"github.com/waterline-dev/waterline/pkg/securemetrics"
	"github.com/waterline-dev/waterline/pkg/version"
	"github.com/waterline-dev/waterline/pkg/webhookprobe"
)

// NewCommand returns the waterline-manager command.
func NewCommand() *cobra.Command {
	opts := NewOptions()
	logOpts := logs.NewOptions()
	cmd := &cobra.Command{
		Use:   "waterline-manager",
		Short: "Waterline's cluster controllers and admission webhooks",
		Long: `waterline-manager keeps one NodeMetric per node with the collection and
prediction policy of its ColocationPolicy, publishes each node's Mid and Batch
tier allocatable from its agent's prediction, and serves Waterline's admission
webhooks.`,
		SilenceUsage: true,
		Args:         cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := logsapi.ValidateAndApply(logOpts, nil); err != nil {
				return err
			}
			if errs := opts.Validate(); len(errs) > 0 {
				return fmt.Errorf("invalid flags: %w", errs.ToAggregate())
			}
			// cli.Run installs no signal handling: stop gracefully (leader
			// lease released, webhooks drained) on SIGTERM and SIGINT.
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return Run(ctx, opts)
		},
	}
	opts.AddFlags(cmd.Flags())
	logsapi.AddFlags(logOpts, cmd.Flags())
	return cmd
}

// Scheme knows the built-in types and waterline.dev.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// Run runs the manager until ctx ends.
func Run(ctx context.Context, opts *Options) error {
	ctrl.SetLogger(klog.NewKlogr())
	logger := klog.FromContext(ctx)
	logger.Info("Starting waterline-manager", "version", version.Get().String())

	cfg, err := cmdutil.RESTConfig(opts.Kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = opts.KubeAPIQPS, opts.KubeAPIBurst
	scheme, err := Scheme()
	if err != nil {
		return err
	}
	metrics, err := metricsOptions(opts)
	if err != nil {
		return err
	}
	mgrOpts := ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metrics,
		HealthProbeBindAddress:  opts.HealthProbeBindAddress,
		LeaderElection:          opts.LeaderElect,
		LeaderElectionID:        "waterline-manager.waterline.dev",
		LeaderElectionNamespace: opts.LeaderElectionNamespace,
		LeaseDuration:           &opts.LeaseDuration,
		RenewDeadline:           &opts.RenewDeadline,
		RetryPeriod:             &opts.RetryPeriod,
		// Give the Lease up on SIGTERM, so that the next replica leads at
		// once rather than after LeaseDuration. Safe: the process exits
		// as soon as the manager has stopped (Run returns to main).
		LeaderElectionReleaseOnCancel: true,
		Cache: cache.Options{
			// Pods and nodes are the big objects in a cluster's cache; the
			// controllers never read managed fields.
			DefaultTransform: cache.TransformStripManagedFields(),
		},
	}
	if opts.Webhooks {
		mgrOpts.WebhookServer = webhook.NewServer(webhook.Options{
			Host: opts.WebhookHost, Port: opts.WebhookPort, CertDir: opts.WebhookCertDir,
			// HTTP/1.1 only, as kubebuilder scaffolds it: HTTP/2's stream
			// resets (CVE-2023-44487, CVE-2023-39325) could starve the
			// server every pod creation of a colocated namespace waits on.
			// The API server calls webhooks over HTTP/1.1 as well.
			TLSOpts: []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }},
		})
	}
	mgr, err := ctrl.NewManager(cfg, mgrOpts)
	if err != nil {
		return fmt.Errorf("creating the controller manager: %w", err)
	}
	if err := setup(mgr, opts); err != nil {
		return err
	}
	if opts.Webhooks {
		if err := setupWebhookConfigurations(ctx, mgr, opts); err != nil {
			return err
		}
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if opts.Webhooks {
		if err := mgr.AddReadyzCheck("webhook-server", mgr.GetWebhookServer().StartedChecker()); err != nil {
			return err
		}
	}
	if err := mgr.AddReadyzCheck("caches", cacheSynced(mgr.GetCache())); err != nil {
		return err
	}
	if err := mgr.Start(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("running the controller manager: %w", err)
	}
	return nil
}

func setup(mgr ctrl.Manager, opts *Options) error {
	if opts.Enabled(ControllerNodeMetric) {
		if err := (&nodemetric.Reconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
			return fmt.Errorf("setting up the %s controller: %w", nodemetric.ControllerName, err)
		}
	}
	if opts.Webhooks {
		mgr.GetWebhookServer().Register(webhookprobe.Path, &webhook.Admission{Handler: &probe.Handler{Replica: replicaName()}})
		mgr.GetWebhookServer().Register(profile.Path, &webhook.Admission{Handler: &profile.Handler{
			Reader:   mgr.GetClient(),
			Decoder:  admission.NewDecoder(mgr.GetScheme()),
			FailOpen: opts.ColocationWebhookFailOpen || opts.ColocationWebhookFailurePolicy == "Ignore",
		}})
		// Start the informers the handler reads before the first request,
		// so readiness waits for them instead of the first admission.
		for _, obj := range []client.Object{&corev1.Namespace{}, &schedulingv1.PriorityClass{}, &v1alpha1.ColocationPolicy{}} {
			if _, err := mgr.GetCache().GetInformer(context.Background(), obj); err != nil {
				return fmt.Errorf("watching %T: %w", obj, err)
			}
		}
		if opts.AgentEvictionWebhook {
			mgr.GetWebhookServer().Register(agentscope.Path, &webhook.Admission{Handler: &agentscope.Handler{
				Pods: mgr.GetClient(), Live: mgr.GetAPIReader(),
			}})
		}
		if opts.DaemonSetPriorityClass != "" {
			mgr.GetWebhookServer().Register(daemonset.Path, &webhook.Admission{Handler: &daemonset.Handler{
				Decoder: admission.NewDecoder(mgr.GetScheme()), PriorityClassName: opts.DaemonSetPriorityClass,
				Classes: mgr.GetClient(),
			}})
		}
		if qc, on := opts.QuotaConfig(); on {
			// Live reads: a quota created a moment ago must count, or the
			// pod would be refused wrongly. Only pods of limited classes
			// cost a read.
			h, err := quota.NewHandler(qc, mgr.GetAPIReader(), admission.NewDecoder(mgr.GetScheme()))
			if err != nil {
				return fmt.Errorf("setting up the priority-class quota webhook: %w", err)
			}
			mgr.GetWebhookServer().Register(quota.Path, &webhook.Admission{Handler: h})
		}
	}
	if opts.Enabled(ControllerNodeQOS) {
		if err := (&nodeqos.Reconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
			return fmt.Errorf("setting up the %s controller: %w", nodeqos.ControllerName, err)
		}
	}
	if opts.Enabled(ControllerPolicy) {
		if err := (&policystatus.Reconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
			return fmt.Errorf("setting up the %s controller: %w", policystatus.ControllerName, err)
		}
	}
	if opts.Enabled(ControllerTiers) {
		if err := nodetiers.IndexPods(context.Background(), mgr); err != nil {
			return fmt.Errorf("indexing pods by node: %w", err)
		}
		if err := (&nodetiers.Reconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
			return fmt.Errorf("setting up the %s controller: %w", nodetiers.ControllerName, err)
		}
	}
	return nil
}

// replicaName names this manager replica: its pod ($POD_NAME, which the
// chart sets; the host name is the node's on the host network), or the
// host name.
func replicaName() string {
	if name := os.Getenv("POD_NAME"); name != "" {
		return name
	}
	name, _ := os.Hostname()
	return name
}

// metricsOptions serves /metrics as --metrics-secure says: over HTTPS
// behind pkg/securemetrics (the agent's checks, not controller-runtime's
// filter, so that both components answer alike), or in plain HTTP.
func metricsOptions(opts *Options) (metricsserver.Options, error) {
	out := metricsserver.Options{BindAddress: opts.MetricsBindAddress}
	if !opts.MetricsSecure || opts.MetricsBindAddress == "0" {
		return out, nil
	}
	tlsConfig, err := securemetrics.TLSConfig(opts.MetricsCertDir)
	if err != nil {
		if opts.MetricsCertDir != "" {
			err = fmt.Errorf("--metrics-cert-dir: %w", err)
		}
		return out, err
	}
	out.SecureServing = true
	// Ours in place of controller-runtime's defaults, which offer HTTP/2
	// and look for a certificate in a directory of their own.
	out.TLSOpts = []func(*tls.Config){func(c *tls.Config) {
		c.MinVersion, c.NextProtos = tlsConfig.MinVersion, tlsConfig.NextProtos
		c.Certificates, c.GetCertificate = tlsConfig.Certificates, tlsConfig.GetCertificate
	}}
	out.FilterProvider = func(cfg *rest.Config, _ *http.Client) (metricsserver.Filter, error) {
		authz, err := securemetrics.NewAuthorizer(cfg)
		if err != nil {
			return nil, err
		}
		return func(_ logr.Logger, next http.Handler) (http.Handler, error) { return authz.Wrap(next), nil }, nil
	}
	return out, nil
}
