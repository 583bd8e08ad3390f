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

package configuration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/manager/certs"
)

// Target is a webhook configuration whose CA bundle the manager keeps.
type Target struct {
	// Mutating or validating.
	Mutating bool
	Name     string
}

// ParseTarget reads "mutating/<name>" or "validating/<name>".
func ParseTarget(s string) (Target, error) {
	for prefix, mutating := range map[string]bool{"mutating/": true, "validating/": false} {
		if len(s) > len(prefix) && s[:len(prefix)] == prefix {
			return Target{Mutating: mutating, Name: s[len(prefix):]}, nil
		}
	}
	return Target{}, fmt.Errorf("%q: want mutating/<name> or validating/<name>", s)
}

// Syncer keeps the certificate and the webhook configurations current. It
// runs in every replica (each serves the webhooks from its own files);
// what it writes is the same in all of them.
type Syncer struct {
	Kube kubernetes.Interface
	// Policies reads the default ColocationPolicy.
	Policies client.Reader
	Keeper   *certs.Keeper
	// Colocation is the colocation-profile webhook's configuration; nil
	// leaves it alone.
	Colocation *Colocation
	// Targets get the CA bundle too.
	Targets []Target
	// Interval between passes; a policy change triggers one at once.
	Interval time.Duration

	trigger chan struct{}
}

// NewSyncer fills the trigger channel.
func (s *Syncer) init() {
	if s.trigger == nil {
		s.trigger = make(chan struct{}, 1)
	}
}

// Trigger asks for a pass now (the profiles changed).
func (s *Syncer) Trigger() {
	s.init()
	select {
	case s.trigger <- struct{}{}:
	default:
	}
}

// NeedLeaderElection is false: every replica needs current certificate
// files.
func (s *Syncer) NeedLeaderElection() bool { return false }

// Start runs passes until ctx ends.
func (s *Syncer) Start(ctx context.Context) error {
	s.init()
	logger := klog.FromContext(ctx).WithName("webhook-configuration")
	ctx = klog.NewContext(ctx, logger)
	t := time.NewTicker(s.Interval)
	defer t.Stop()
	for {
		if err := s.Sync(ctx); err != nil {
			logger.Error(err, "Keeping the webhook certificate and configurations")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-s.trigger:
		}
	}
}

// Sync runs one pass: certificate files, then every configuration.
func (s *Syncer) Sync(ctx context.Context) error {
	caBundle, err := s.Keeper.Ensure(ctx)
	if err != nil {
		return fmt.Errorf("keeping the serving certificate: %w", err)
	}
	var errs []error
	if s.Colocation != nil {
		if err := s.syncColocation(ctx, caBundle); err != nil {
			errs = append(errs, err)
		}
	}
	for _, t := range s.Targets {
		if err := s.injectCABundle(ctx, t, caBundle); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (s *Syncer) syncColocation(ctx context.Context, caBundle []byte) error {
	policy := &v1alpha1.ColocationPolicy{}
	var profiles []v1alpha1.ColocationProfile
	if err := s.Policies.Get(ctx, types.NamespacedName{Name: v1alpha1.DefaultColocationPolicyName}, policy); err == nil {
		profiles = policy.Spec.Profiles
	} else if !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading ColocationPolicy %s: %w", v1alpha1.DefaultColocationPolicyName, err)
	}
	mwcs := s.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations()
	cur, err := mwcs.Get(ctx, s.Colocation.Name, metav1.GetOptions{})
	if err != nil {
		// The chart creates the object (and deletes it at uninstall); the
		// manager only fills it in.
		return fmt.Errorf("reading MutatingWebhookConfiguration %s: %w", s.Colocation.Name, err)
	}
	if caBundle == nil && len(cur.Webhooks) > 0 {
		caBundle = cur.Webhooks[0].ClientConfig.CABundle
	}
	want := s.Colocation.Webhooks(profiles, caBundle)
	if equality.Semantic.DeepEqual(normalize(cur.Webhooks), normalize(want)) {
		return nil
	}
	upd := cur.DeepCopy()
	upd.Webhooks = want
	if _, err := mwcs.Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating MutatingWebhookConfiguration %s: %w", s.Colocation.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Updated the colocation-profile webhook configuration", "name", s.Colocation.Name, "profiles", len(profiles))
	return nil
}

// normalize treats an unset list like an empty one.
func normalize(h []admissionregistrationv1.MutatingWebhook) []admissionregistrationv1.MutatingWebhook {
	if len(h) == 0 {
		return nil
	}
	return h
}

func (s *Syncer) injectCABundle(ctx context.Context, t Target, caBundle []byte) error {
	if caBundle == nil {
		return nil
	}
	api := s.Kube.AdmissionregistrationV1()
	if t.Mutating {
		cur, err := api.MutatingWebhookConfigurations().Get(ctx, t.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading MutatingWebhookConfiguration %s: %w", t.Name, err)
		}
		upd, changed := cur.DeepCopy(), false
		for i := range upd.Webhooks {
			if !bytes.Equal(upd.Webhooks[i].ClientConfig.CABundle, caBundle) {
				upd.Webhooks[i].ClientConfig.CABundle, changed = caBundle, true
			}
		}
		if changed {
			_, err = api.MutatingWebhookConfigurations().Update(ctx, upd, metav1.UpdateOptions{})
		}
		return wrap(err, "MutatingWebhookConfiguration", t.Name)
	}
	cur, err := api.ValidatingWebhookConfigurations().Get(ctx, t.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading ValidatingWebhookConfiguration %s: %w", t.Name, err)
	}
	upd, changed := cur.DeepCopy(), false
	for i := range upd.Webhooks {
		if !bytes.Equal(upd.Webhooks[i].ClientConfig.CABundle, caBundle) {
			upd.Webhooks[i].ClientConfig.CABundle, changed = caBundle, true
		}
	}
	if changed {
		_, err = api.ValidatingWebhookConfigurations().Update(ctx, upd, metav1.UpdateOptions{})
	}
	return wrap(err, "ValidatingWebhookConfiguration", t.Name)
}

func wrap(err error, kind, name string) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("setting the CA bundle of %s %s: %w", kind, name, err)
}
