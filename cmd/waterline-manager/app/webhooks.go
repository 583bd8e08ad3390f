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
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/manager/certs"
	"github.com/waterline-dev/waterline/pkg/manager/webhook/configuration"
	"github.com/waterline-dev/waterline/pkg/manager/webhook/profile"
)

// certHosts are the names the serving certificate must be valid for.
func (o *Options) certHosts() certs.Hosts {
	if o.WebhookURL != "" {
		u, err := url.Parse(o.WebhookURL)
		if err == nil {
			if ip := net.ParseIP(u.Hostname()); ip != nil {
				return certs.Hosts{IPs: []net.IP{ip}}
			}
			return certs.Hosts{DNSNames: []string{u.Hostname()}}
		}
	}
	svc := o.WebhookService + "." + o.WebhookNamespace + ".svc"
	return certs.Hosts{DNSNames: []string{svc, svc + ".cluster.local"}}
}

// setupWebhookConfigurations makes the certificate files exist before the
// webhook server starts, and adds the syncer that keeps them and the
// webhook configurations current.
func setupWebhookConfigurations(ctx context.Context, mgr ctrl.Manager, opts *Options) error {
	kube, err := kubernetes.NewForConfig(mgr.GetConfig())
	if err != nil {
		return err
	}
	keeper := &certs.Keeper{
		Client: kube, Mode: certs.Mode(opts.WebhookCertMode),
		Namespace: opts.WebhookNamespace, SecretName: opts.WebhookCertSecret,
		Dir: opts.WebhookCertDir, Hosts: opts.certHosts(), Validity: opts.WebhookCertValidity,
		Clock: clock.RealClock{},
	}
	// The webhook server refuses to start without its files: get them
	// before the manager starts, retrying while the API server is away.
	var lastErr error
	if err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, lastErr = keeper.Ensure(ctx)
		if lastErr != nil {
			klog.FromContext(ctx).Error(lastErr, "Preparing the webhook serving certificate; retrying")
		}
		return lastErr == nil, nil
	}); err != nil {
		return fmt.Errorf("preparing the webhook serving certificate: %w", errors.Join(err, lastErr))
	}
	s := &configuration.Syncer{Kube: kube, Policies: mgr.GetAPIReader(), Keeper: keeper, Interval: time.Minute}
	for _, c := range opts.CABundleConfigurations {
		t, _ := configuration.ParseTarget(c) // validated
		s.Targets = append(s.Targets, t)
	}
	if opts.ColocationWebhookConfiguration != "" {
		s.Colocation = &configuration.Colocation{
			Name: opts.ColocationWebhookConfiguration,
			Client: configuration.ClientConfig{
				URL: opts.WebhookURL, ServiceName: opts.WebhookService, ServiceNamespace: opts.WebhookNamespace,
			},
			Path:               profile.Path,
			FailurePolicy:      admissionregistrationv1.FailurePolicyType(opts.ColocationWebhookFailurePolicy),
			TimeoutSeconds:     int32(opts.ColocationWebhookTimeout / time.Second),
			ExcludedNamespaces: excluded(opts),
		}
		// A profile change reaches the configuration at once, not at the
		// next tick: pods of a newly selected namespace must not slip by.
		inf, err := mgr.GetCache().GetInformer(ctx, &v1alpha1.ColocationPolicy{})
		if err != nil {
			return fmt.Errorf("watching ColocationPolicies: %w", err)
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { s.Trigger() },
			UpdateFunc: func(any, any) { s.Trigger() },
			DeleteFunc: func(any) { s.Trigger() },
		}); err != nil {
			return err
		}
	}
	return mgr.Add(s)
}

func excluded(opts *Options) []string {
	out := []string{}
	seen := map[string]bool{}
	for _, ns := range append([]string{opts.WebhookNamespace}, opts.WebhookExcludedNamespaces...) {
		if ns != "" && !seen[ns] {
			seen[ns] = true
			out = append(out, ns)
		}
	}
	return out
}

// cacheSynced is ready once every informer the handlers read from has
// synced: before that a webhook would answer from an empty cache.
func cacheSynced(c cache.Cache) healthz.Checker {
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), 200*time.Millisecond)
		defer cancel()
		if !c.WaitForCacheSync(ctx) {
			return errors.New("caches are not synced yet")
		}
		return nil
	}
}
