// Package qos is waterline-agent's node QoS executor (docs/design/node-qos.md):
// every cycle it turns the NodeQOS objects that select its node into
// waterlines, measures the node and its pods from the cycle's sample, asks
// the pure planner (pkg/core/qos) what to do, and does it -- CPU quotas as
// intents to the resctl.Reconciler (the one writer of pod cgroups),
// evictions through the Eviction API (PodDisruptionBudgets respected, at
// most maxPerMinute, with the NodeQOS grace period, an Event on the pod and
// on the node), and the ForbidScheduling and Throttling conditions of the
// node's NodeMetric.
//
// It decides nothing the planner does not: which pods, how far and in what
// order is the core's. It must never throttle or evict a protected pod
// (extension.QoSProtection: Prod, Mid, DaemonSet, static/mirror,
// system-critical and terminating pods) -- the planner filters them and the
// executor asserts it again before every action -- never evict more than
// the rate limit allows, and never change anything in dry-run. It remembers
// what it applied in memory only: after a restart no pod is throttled until
// the planner asks again.
package qos
