package review

import (
	"sort"
	"strings"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// With queueing kueue a team's quota is a Kueue ClusterQueue (docs/format.md §9.1): a GPU
// quota per pool (flavor) that the team's LocalQueue feeds, in a cohort whose queues lend
// each other their idle quota. This file reads those objects of a rendered revision as
// unstructured objects and sets the GPUs that the workloads of each queue request against
// them, pool by pool.

// QueueQuota is a ClusterQueue's nvidia.com/gpu quota in one flavor (pool).
type QueueQuota struct {
	// Nominal is the nominalQuota: the GPUs the team owns in the pool.
	Nominal int64 `json:"nominal"`
	// BorrowingLimit is the most the queue may borrow from its cohort; nil: no limit.
	BorrowingLimit *int64 `json:"borrowingLimit,omitempty"`
	// LendingLimit is the most of its idle quota the cohort may borrow; nil: all of it.
	LendingLimit *int64 `json:"lendingLimit,omitempty"`
	// Borrowable is the most the queue can borrow in the pool: what the other queues of its
	// cohort lend there (their lendingLimit, else their nominal quota), at most its
	// BorrowingLimit; 0 without a cohort. Whether it is idle depends on the cluster.
	Borrowable int64 `json:"borrowable"`
}

// QueueState is how the GPUs a queue's workloads request in a pool compare with its quota.
type QueueState string

// The states of a QueueLine.
const (
	// QueueFits: the requests are within the queue's nominal quota.
	QueueFits QueueState = "fits"
	// QueueBorrows: the requests exceed the nominal quota but not what the queue can borrow
	// on top: the excess runs on quota lent by the cohort, which its owner can reclaim by
	// preemption.
	QueueBorrows QueueState = "borrows"
	// QueueOverLimit: the requests exceed the nominal quota plus what the queue can borrow
	// (or the queue is not in the revision): the excess waits in the queue until others finish.
	QueueOverLimit QueueState = "overLimit"
)

// queueStateText is how the formats print each state but QueueFits.
var queueStateText = map[QueueState]string{QueueBorrows: "borrows", QueueOverLimit: "over limit"}

// QueueLine is one team's queue in one pool: the GPUs its workloads request there and its
// quota, before and after.
type QueueLine struct {
	// Team is the ClusterQueue (gpuctl names it after the team's namespace).
	Team string `json:"team"`
	// Pool is the flavor: a workload's pool (poolOf), keys.DefaultPool for none.
	Pool   string `json:"pool"`
	Before int64  `json:"before"`
	After  int64  `json:"after"`
	// QuotaBefore and QuotaAfter are the queue's quota in the pool; nil when the revision has
	// no such ClusterQueue. A queue without the flavor has a quota of 0.
	QuotaBefore *QueueQuota `json:"quotaBefore,omitempty"`
	QuotaAfter  *QueueQuota `json:"quotaAfter,omitempty"`
	// State compares After with QuotaAfter.
	State QueueState `json:"state"`
}

// QuotaChanged reports whether the queue's quota or limits in the pool differ between the
// revisions.
func (l QueueLine) QuotaChanged() bool {
	a, b := l.QuotaBefore, l.QuotaAfter
	if a == nil || b == nil {
		return a != b
	}
	return a.Nominal != b.Nominal || !sameCount(a.BorrowingLimit, b.BorrowingLimit) || !sameCount(a.LendingLimit, b.LendingLimit)
}

// sameCount reports whether two optional counts are both unset or equal.
func sameCount(a, b *int64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// stateOf compares requested GPUs with a queue's quota.
func stateOf(requested int64, q *QueueQuota) QueueState {
	switch {
	case q == nil && requested > 0:
		return QueueOverLimit
	case q == nil, requested <= q.Nominal:
		return QueueFits
	case requested <= q.Nominal+q.Borrowable:
		return QueueBorrows
	}
	return QueueOverLimit
}

// clusterQueue is what a revision's ClusterQueue says about GPUs.
type clusterQueue struct {
	cohort string
	// gpu is the nvidia.com/gpu quota per flavor, Borrowable not yet set.
	gpu map[string]QueueQuota
}

// queues are the Kueue objects of one revision that the budget and the checks read.
type queues struct {
	// byName are the ClusterQueues.
	byName map[string]*clusterQueue
	// local maps "namespace/name" of each LocalQueue to its ClusterQueue.
	local map[string]string
}

// readQueues reads the ClusterQueues and LocalQueues of a revision's objects.
func readQueues(objs []*unstructured.Unstructured) queues {
	qs := queues{byName: map[string]*clusterQueue{}, local: map[string]string{}}
	for _, u := range objs {
		if gv := u.GroupVersionKind(); gv.Group != keys.KueueGroup {
			continue
		}
		switch u.GetKind() {
		case "ClusterQueue":
			qs.byName[u.GetName()] = readClusterQueue(u)
		case "LocalQueue":
			if cq, _, _ := unstructured.NestedString(u.Object, "spec", "clusterQueue"); cq != "" {
				qs.local[u.GetNamespace()+"/"+u.GetName()] = cq
			}
		}
	}
	return qs
}

// readClusterQueue reads the cohort and the nvidia.com/gpu quota of each flavor of a
// ClusterQueue.
func readClusterQueue(u *unstructured.Unstructured) *clusterQueue {
	cq := &clusterQueue{gpu: map[string]QueueQuota{}}
	cq.cohort, _, _ = unstructured.NestedString(u.Object, "spec", "cohortName")
	groups, _, _ := unstructured.NestedSlice(u.Object, "spec", "resourceGroups")
	for _, g := range groups {
		flavors, _, _ := unstructured.NestedSlice(asMap(g), "flavors")
		for _, f := range flavors {
			name, _, _ := unstructured.NestedString(asMap(f), "name")
			resources, _, _ := unstructured.NestedSlice(asMap(f), "resources")
			for _, r := range resources {
				rm := asMap(r)
				if rm["name"] != keys.ResourceGPU {
					continue
				}
				q := QueueQuota{}
				q.Nominal, _ = quantity(rm["nominalQuota"])
				if n, ok := quantity(rm["borrowingLimit"]); ok {
					q.BorrowingLimit = ptr(n)
				}
				if n, ok := quantity(rm["lendingLimit"]); ok {
					q.LendingLimit = ptr(n)
				}
				cq.gpu[name] = q
			}
		}
	}
	return cq
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// quota returns the quota of a ClusterQueue in a flavor with what it can borrow there; a
// queue without the flavor has 0 there; nil when the revision has no such queue.
func (qs queues) quota(team, pool string) *QueueQuota {
	cq := qs.byName[team]
	if cq == nil {
		return nil
	}
	q := cq.gpu[pool]
	if cq.cohort == "" {
		return &q
	}
	for name, other := range qs.byName {
		o, ok := other.gpu[pool]
		if name == team || other.cohort != cq.cohort || !ok {
			continue
		}
		if o.LendingLimit != nil {
			q.Borrowable += min(*o.LendingLimit, o.Nominal)
		} else {
			q.Borrowable += o.Nominal
		}
	}
	if q.BorrowingLimit != nil {
		q.Borrowable = min(q.Borrowable, *q.BorrowingLimit)
	}
	return &q
}

// queueOf returns the ClusterQueue that a workload is queued in: the one of the LocalQueue
// its queue-name label names in its namespace, or of the LocalQueue keys.KueueLocalQueue
// (where Kueue puts workloads without the label); false when the revision has no such
// LocalQueue (the workload is not queued).
func (qs queues) queueOf(u *unstructured.Unstructured) (string, bool) {
	name := u.GetLabels()[keys.KueueQueueName]
	if name == "" {
		name = keys.KueueLocalQueue
	}
	cq, ok := qs.local[u.GetNamespace()+"/"+name]
	return cq, ok
}

// queued reports whether a namespace feeds a ClusterQueue of the revision through one of
// its LocalQueues.
func (qs queues) queued(ns string) bool {
	for k, cq := range qs.local {
		if strings.HasPrefix(k, ns+"/") && qs.byName[cq] != nil {
			return true
		}
	}
	return false
}

type queueKey struct{ team, pool string }

// computeQueues returns a line for each flavor of each ClusterQueue of either revision and
// for each pool where a queue's workloads request GPUs, and marks the namespaces whose
// quota is a queue (TeamBudget.Queue).
func computeQueues(base, head []*unstructured.Unstructured, teams map[string]*TeamBudget) []QueueLine {
	lines := map[queueKey]*QueueLine{}
	side := func(objs []*unstructured.Unstructured, after bool) {
		qs := readQueues(objs)
		if len(qs.byName) == 0 && len(qs.local) == 0 {
			return
		}
		line := func(team, pool string) *QueueLine {
			k := queueKey{team, pool}
			l := lines[k]
			if l == nil {
				l = &QueueLine{Team: team, Pool: pool}
				lines[k] = l
			}
			q := &l.QuotaBefore
			if after {
				q = &l.QuotaAfter
			}
			if *q == nil {
				*q = qs.quota(team, pool)
			}
			return l
		}
		for team, cq := range qs.byName {
			for pool := range cq.gpu {
				line(team, pool)
			}
		}
		for _, u := range objs {
			g := object.GPUs(u)
			if g == 0 {
				continue
			}
			if qs.queued(u.GetNamespace()) {
				team(teams, u.GetNamespace()).Queue = true
			}
			cq, ok := qs.queueOf(u)
			if !ok {
				continue
			}
			l := line(cq, poolOf(u))
			if after {
				l.After += g
			} else {
				l.Before += g
			}
		}
	}
	side(base, false)
	side(head, true)
	out := make([]QueueLine, 0, len(lines))
	for _, l := range lines {
		l.State = stateOf(l.After, l.QuotaAfter)
		out = append(out, *l)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Team != out[j].Team {
			return out[i].Team < out[j].Team
		}
		return out[i].Pool < out[j].Pool
	})
	return out
}
