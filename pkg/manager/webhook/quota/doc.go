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

// Package quota is waterline-manager's quota admission webhook
// (docs/design/preemption.md#quota-per-priorityclass): pods that use one of the
// configured PriorityClasses are admitted only in namespaces that have a
// ResourceQuota scoped to that class, so every pod of a high or NonPreemptible
// class is held by a quota.
//
// It does for clusters whose API server flags cannot be changed what the
// ResourceQuota admission plugin's limitedResources/matchScopes
// configuration (--admission-control-config-file) does: a namespace without
// a covering quota may not create such pods; the denial names the class and
// the namespace.
//
// It decides admission only. It must never mutate a pod, never create or
// change a ResourceQuota, and never judge pods of classes it is not
// configured for.
package quota
