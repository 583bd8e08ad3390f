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

package sim

import (
	"slices"

	"github.com/waterline-dev/waterline/pkg/core/qos"
	"github.com/waterline-dev/waterline/pkg/sim/workload"
)

// utilBins is the resolution of the CPU utilisation histogram: 0.1 % per
// bin up to 200 % (a node can only reach 100 %; the room is for safety).
const utilBins = 2001

// collector accumulates a policy's figures as the run goes; every update
// is a few additions, so that measuring costs little next to simulating.
type collector struct {
	r *run

	// Over the whole run.
	utilHist            [utilBins]int64
	utilSum             float64
	nodeSteps           int64
	prodNodeSteps, over int64
	// Prod pod-steps, those over their SLO, and Σ latency factor × pods.
	prodPodSteps, sloViolated int64
	latencySum                float64
	sloCurve                  [len(SLOFactors)]int64
	shortfallMilli            int64 // millicore-steps
	throttledMilli            int64 // millicore-steps
	predSteps, violated       int64
	evictions, ooms           int64
	preemptions, refused      int64
	breaches, acted           int64
	// Released and needed over breaches, per unit: CPU (millicores) and
	// memory (bytes).
	cpuReleased, cpuNeeded int64
	memReleased, memNeeded int64
	batch, mid             jobAcc

	// This step, over all nodes.
	step stepAcc
	// This chart point, over its steps.
	point      stepAcc
	pointSteps int
	perPoint   int
	pointEvict int64
	series     Series
}

type stepAcc struct {
	cpu, capacity                        float64
	prodNodes, over                      float64
	prodPods, sloViolated                float64
	prod, batch, mid                     float64
	batchAlloc, batchReq                 float64
	throttledPods, throttledCPU, pending float64
}

func (a *stepAcc) add(o *stepAcc) {
	a.cpu += o.cpu
	a.capacity += o.capacity
	a.prodNodes += o.prodNodes
	a.over += o.over
	a.prodPods += o.prodPods
	a.sloViolated += o.sloViolated
	a.prod += o.prod
	a.batch += o.batch
	a.mid += o.mid
	a.batchAlloc += o.batchAlloc
	a.batchReq += o.batchReq
	a.throttledPods += o.throttledPods
	a.throttledCPU += o.throttledCPU
	a.pending += o.pending
}

type jobAcc struct {
	submitted, completed, evicted, preempted int64
	usedMilli                                int64 // millicore-steps
	slowdowns                                []float64
}

func newCollector(r *run) *collector {
	points := max(2, r.cfg.ChartPoints)
	steps := int(r.w.Duration / r.cfg.Step)
	return &collector{r: r, perPoint: max(1, (steps+points-1)/points)}
}

// node records one node's step.
func (c *collector) node(n *node, throttledMilli, shortfallMilli, violating, starved int64, latency float64) {
	capacity := n.spec.CPUMilli
	util := float64(n.usageCPU) / float64(capacity)
	c.utilSum += util
	c.utilHist[min(utilBins-1, max(0, int(util*1000+0.5)))]++
	c.nodeSteps++
	c.throttledMilli += throttledMilli
	c.shortfallMilli += max(0, shortfallMilli)
	s := &c.step
	s.cpu += float64(n.usageCPU)
	s.capacity += float64(capacity)
	if n.prodPods > 0 {
		c.prodPodSteps += n.prodPods
		c.sloViolated += violating
		c.latencySum += latency * float64(n.prodPods)
		for i, f := range SLOFactors {
			if latency > f {
				c.sloCurve[i] += n.prodPods
			} else {
				c.sloCurve[i] += starved
			}
		}
		s.prodPods += float64(n.prodPods)
		s.sloViolated += float64(violating)
		c.prodNodeSteps++
		s.prodNodes++
		if n.usageCPU > n.evictLine {
			c.over++
			s.over++
		}
	}
	mid := n.usageCPU - n.spec.SystemCPUMilli - n.prodCPU - n.beCPU
	s.prod += float64(n.prodCPU)
	s.batch += float64(n.beCPU)
	s.mid += float64(mid)
	c.batch.usedMilli += n.beCPU
	c.mid.usedMilli += mid
	s.batchAlloc += float64(n.alloc[resBatchCPU])
	s.throttledPods += float64(n.throttled)
	s.throttledCPU += float64(throttledMilli)
	s.batchReq += float64(n.batchReqCPU)
	if n.hasPeak {
		c.predSteps++
		if n.prodCPU+n.spec.SystemCPUMilli > n.peakCPU {
			c.violated++
		}
	}
}

// stepDone closes the step: the cluster's sums go into the chart point.
func (c *collector) stepDone() {
	c.step.pending = float64(c.r.queue.size)
	c.point.add(&c.step)
	c.step = stepAcc{}
	c.pointSteps++
	if c.pointSteps == c.perPoint {
		c.flushPoint()
	}
}

func (c *collector) flushPoint() {
	if c.pointSteps == 0 {
		return
	}
	p, k := &c.point, float64(c.pointSteps)
	s := &c.series
	first := c.r.step + 1 - c.pointSteps
	s.Hours = append(s.Hours, float64(first)*c.r.cfg.Step.Hours())
	s.CPUPercent = append(s.CPUPercent, 100*p.cpu/max(p.capacity, 1))
	s.ProdContentionPercent = append(s.ProdContentionPercent, 100*p.over/max(p.prodNodes, 1))
	s.ProdSLOViolationPercent = append(s.ProdSLOViolationPercent, 100*p.sloViolated/max(p.prodPods, 1))
	s.ProdCores = append(s.ProdCores, p.prod/1000/k)
	s.BatchCores = append(s.BatchCores, p.batch/1000/k)
	s.MidCores = append(s.MidCores, p.mid/1000/k)
	s.BatchAllocatableCores = append(s.BatchAllocatableCores, p.batchAlloc/1000/k)
	s.BatchRequestedCores = append(s.BatchRequestedCores, p.batchReq/1000/k)
	s.Evictions = append(s.Evictions, float64(c.pointEvict))
	s.ThrottledPods = append(s.ThrottledPods, p.throttledPods/k)
	s.ThrottledCores = append(s.ThrottledCores, p.throttledCPU/1000/k)
	s.Pending = append(s.Pending, p.pending/k)
	c.point, c.pointSteps, c.pointEvict = stepAcc{}, 0, 0
}

func (c *collector) jobs(class workload.Class) *jobAcc {
	if class == workload.ClassMid {
		return &c.mid
	}
	return &c.batch
}

func (c *collector) arrived(j *workload.Job) { c.jobs(j.Class).submitted++ }

func (c *collector) finished(js *jobState) {
	a := c.jobs(js.spec.Class)
	a.completed++
	a.slowdowns = append(a.slowdowns, float64(js.finishedAt-js.spec.Arrival)/float64(js.spec.Duration))
}

func (c *collector) evicted(js *jobState) {
	c.jobs(js.spec.Class).evicted++
	c.pointEvict++
}

func (c *collector) oomKilled() { c.ooms++ }

func (c *collector) preempted(js *jobState) {
	c.jobs(js.spec.Class).preempted++
	c.preemptions++
}

func (c *collector) evictionRefused() { c.refused++ }

func (c *collector) qosEvicted() { c.evictions++ }

// planned records a plan: whether it acted, on how many pods, and how
// much it released against what was needed. widened, for evict-all,
// replaces what the plan released by what acting on every pod releases.
func (c *collector) planned(n *node, plan *qos.Plan, w *widening) {
	acted := int64(len(plan.Evictions))
	for i := range plan.Quotas {
		q := &plan.Quotas[i]
		if q.DesiredMilli != qos.NoQuota && (q.CurrentMilli == qos.NoQuota || q.DesiredMilli < q.CurrentMilli) {
			acted++
		}
	}
	if acted > 0 {
		c.breaches++
		c.acted += acted
	}
	for _, o := range plan.Outcomes {
		if o.Action != qos.ActionThrottleDown && o.Action != qos.ActionEvict {
			continue
		}
		if o.Mode != qos.ModePrecise && o.Mode != qos.ModeSatisfaction || o.Acted == 0 {
			continue
		}
		need := o.Gap - o.Pending
		if need <= 0 {
			continue
		}
		released := o.Released
		if w != nil {
			if o.Action == qos.ActionThrottleDown && w.throttle {
				released = w.throttleReleased
			}
			if o.Action == qos.ActionEvict && w.evict {
				released = w.evictReleased[o.Metric]
				if o.Mode == qos.ModeSatisfaction {
					released = w.evictRequest
				}
			}
		}
		if o.Metric == qos.MetricMemory {
			c.memReleased += released
			c.memNeeded += need
		} else {
			c.cpuReleased += released
			c.cpuNeeded += need
		}
	}
}

// finish turns the sums into the Summary.
func (c *collector) finish() Summary {
	c.flushPoint()
	r := c.r
	hours := r.w.Duration.Hours()
	stepSec := float64(r.stepSec)
	s := Summary{
		MeanCPUPercent:           100 * c.utilSum / float64(max(c.nodeSteps, 1)),
		P95CPUPercent:            c.utilPercentile(0.95),
		ProdContentionPercent:    100 * float64(c.over) / float64(max(c.prodNodeSteps, 1)),
		ProdShortfallCoreSeconds: float64(c.shortfallMilli) * stepSec / 1000,
		ProdSLOViolationPercent:  100 * float64(c.sloViolated) / float64(max(c.prodPodSteps, 1)),
		ProdLatencyFactorMean:    c.latencySum / float64(max(c.prodPodSteps, 1)),
		Evictions:                c.evictions,
		EvictionsPerNodeHour:     float64(c.evictions) / (float64(len(r.nodes)) * hours),
		OOMKills:                 c.ooms,
		Preemptions:              c.preemptions,
		EvictionsRefused:         c.refused,
		ThrottledCoreSeconds:     float64(c.throttledMilli) * stepSec / 1000,
		QoSBreaches:              c.breaches,
		PodsActed:                c.acted,
		Batch:                    c.batch.stats(stepSec),
		Harm:                     *r.cfg.Harm,
		Mid:                      c.mid.stats(stepSec),
		PendingAtEnd:             r.queue.size,
	}
	for i, f := range SLOFactors {
		s.ProdSLOCurve = append(s.ProdSLOCurve, SLOPoint{Factor: f, ViolationPercent: 100 * float64(c.sloCurve[i]) / float64(max(c.prodPodSteps, 1))})
	}
	if c.cpuNeeded > 0 {
		v := float64(c.cpuReleased) / float64(c.cpuNeeded)
		s.OverActionRatio = &v
	}
	if c.memNeeded > 0 {
		v := float64(c.memReleased) / float64(c.memNeeded)
		s.MemoryOverActionRatio = &v
	}
	if r.policy.colocated() && c.predSteps > 0 {
		v := 100 * float64(c.violated) / float64(c.predSteps)
		s.PredictionViolationPercent = &v
	}
	return s
}

// utilPercentile is the q-quantile of node CPU utilisation, in percent,
// to the histogram's 0.1 %.
func (c *collector) utilPercentile(q float64) float64 {
	rank := int64(q * float64(c.nodeSteps))
	var seen int64
	for i, n := range c.utilHist {
		seen += n
		if seen > rank {
			return float64(i) / 10
		}
	}
	return 0
}

func (a *jobAcc) stats(stepSec float64) JobStats {
	s := JobStats{
		Submitted: a.submitted,
		Completed: a.completed,
		CoreHours: float64(a.usedMilli) * stepSec / 1000 / 3600,
		Evicted:   a.evicted,
		Preempted: a.preempted,
	}
	if a.submitted > 0 {
		s.CompletionPercent = 100 * float64(a.completed) / float64(a.submitted)
	}
	if len(a.slowdowns) > 0 {
		var sum float64
		for _, v := range a.slowdowns {
			sum += v
		}
		s.MeanSlowdown = sum / float64(len(a.slowdowns))
		sorted := slices.Clone(a.slowdowns)
		slices.Sort(sorted)
		s.P95Slowdown = sorted[min(len(sorted)-1, int(0.95*float64(len(sorted))))]
	}
	return s
}

// widening is what evict-all's agent released beyond the precise plan.
type widening struct {
	throttle, evict  bool
	throttleReleased int64
	evictReleased    map[qos.MetricName]int64
	evictRequest     int64
}
