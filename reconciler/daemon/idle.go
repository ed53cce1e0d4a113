package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/gpuctl/gpuctl/edit"
	"github.com/gpuctl/gpuctl/internal/humanize"
	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	"github.com/gpuctl/gpuctl/render"
	"github.com/gpuctl/gpuctl/review"
	"github.com/gpuctl/gpuctl/usage"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

// The idle policy (gpuctl-policy.yaml's idle rules, docs/metrics.md) and gpuctl_team_gpus:
// every Options.IdleEvery the leader lists the running pods of gpuctl's jobs, reads their
// GPUs' utilization from Prometheus (Options.Usage) and the policy of the last fetched
// revision, sets the gauge, and warns about, reports or pauses each job that its rule finds
// idle. A pause is a write as the API's (Write): a commit by gpuctl, that `gpuctl resume`
// undoes.

// DefaultIdleEvery is how often the idle policy and gpuctl_team_gpus are evaluated when
// Options.IdleEvery is 0.
const DefaultIdleEvery = 5 * time.Minute

// The reasons of the idle policy's Events, on the job's workload object (its Job, JobSet,
// Deployment or StatefulSet).
const (
	// ReasonIdleGPU: a job's GPUs are idle: it comes close to its rule's time, or has reached
	// it under a rule that reports.
	ReasonIdleGPU = "IdleGPU"
	// ReasonIdlePaused: the idle policy paused the job.
	ReasonIdlePaused = "IdlePaused"
	// ReasonNoGPUMetrics: a job holds GPUs that have no series in Prometheus: its use is
	// unknown, and the policy never pauses it.
	ReasonNoGPUMetrics = "NoGPUMetrics"
)

// idleWriter is who the idle policy's pauses are written by.
var idleWriter = Writer{Name: "gpuctl", Admin: true}

// IdleAction is what a round of the idle policy did about a job.
type IdleAction struct {
	Job  edit.JobRef
	Rule string
	// Reason is the Event's reason (ReasonIdleGPU, ReasonIdlePaused, ReasonNoGPUMetrics);
	// Message its message.
	Reason  string
	Message string
	// Commit is the pause's commit ("" for a directory source or another action).
	Commit string
}

// idleState is what the idle policy remembers between rounds: the idle run of each job it
// has warned about or acted on, so that a run gets each once. Only the loop's goroutine uses it.
type idleState struct {
	runs      map[string]*idleRun // by job id
	noSeries  map[string]bool     // jobs told to have no series
	policyErr string              // the last invalid policy logged
}

// idleRun is a job's idle run going on.
type idleRun struct {
	start, seen   time.Time // when the run began; the round that last saw it
	warned, acted bool
	// told is the job once an IdleGPU alert opened its condition, closed when the run ends.
	told *edit.JobRef
}

// runIdle evaluates the idle policy every IdleEvery after the first sync, until ctx ends.
func (d *Daemon) runIdle(ctx context.Context) {
	select {
	case <-d.firstSync:
	case <-ctx.Done():
		return
	}
	t := time.NewTicker(d.opts.IdleEvery)
	defer t.Stop()
	for {
		if _, err := d.idleRound(ctx); err != nil && ctx.Err() == nil {
			d.opts.Log.Warn("idle policy: round failed; the next one tries again", "err", err, "every", d.opts.IdleEvery)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// idleRound is one round: it sets gpuctl_team_gpus and applies the idle rules.
func (d *Daemon) idleRound(ctx context.Context) ([]IdleAction, error) {
	pods, err := d.gpuPods(ctx)
	if err != nil {
		return nil, err
	}
	gpus, err := d.opts.Usage.GPUs(ctx, usage.Scope{}, usage.DefaultWindow)
	if err != nil {
		d.opts.Metrics.setTeamGPUs(nil) // no value rather than a stale one
		return nil, err
	}
	policy := d.idlePolicy()
	d.opts.Metrics.setTeamGPUs(teamGPUs(pods, gpus, policy))
	if policy == nil || len(policy.Idle) == 0 {
		d.idle.runs, d.idle.noSeries = nil, nil
		return nil, nil
	}
	return d.applyIdle(ctx, policy, pods)
}

// applyIdle audits the pods under each rule that matches some of their jobs, and acts.
func (d *Daemon) applyIdle(ctx context.Context, policy *review.Policy, pods []usage.Pod) ([]IdleAction, error) {
	byRule := map[*review.IdleRule][]usage.Pod{}
	var rules []*review.IdleRule
	for _, p := range pods {
		r := policy.IdleRuleFor(p.Namespace, p.Kind)
		if r == nil {
			continue
		}
		if _, ok := byRule[r]; !ok {
			rules = append(rules, r)
		}
		byRule[r] = append(byRule[r], p)
	}
	now := d.opts.Now()
	if d.idle.runs == nil {
		d.idle.runs, d.idle.noSeries = map[string]*idleRun{}, map[string]bool{}
	}
	seen, dark := map[string]bool{}, map[string]bool{}
	var out []IdleAction
	var errs []error
	for _, r := range rules {
		step := max(usage.DefaultStep(r.For), time.Minute)
		// The window reaches past the rule's time by a round: a run that lasts longer is the
		// same run in the next round, not one that began at the window's start.
		jobs, err := d.opts.Usage.Idle(ctx, usage.Scope{Namespaces: r.Teams}, byRule[r], usage.IdleOptions{
			Threshold: r.Threshold, Window: r.For + d.opts.IdleEvery + step, Step: step, For: r.For - r.WarnBefore})
		if err != nil {
			errs = append(errs, fmt.Errorf("rule %s: %w", r.Name, err))
			continue
		}
		for _, j := range jobs {
			if j.NoSeries {
				dark[j.JobID] = true
				if a, ok := d.idleNoSeries(ctx, r, j); ok {
					out = append(out, a)
				}
				continue
			}
			idleNow := time.Duration(j.Now)
			if idleNow < r.For-r.WarnBefore {
				continue
			}
			run := d.idle.runFor(j.JobID, now.Add(-idleNow), now, step)
			seen[j.JobID] = true
			if a, ok := d.idleAct(ctx, r, j, run); ok {
				out = append(out, a)
			}
		}
	}
	if len(errs) > 0 { // what a failed audit did not see may still be idle
		return out, errors.Join(errs...)
	}
	for id, run := range d.idle.runs { // runs that ended, of jobs gone or busy again
		if !seen[id] {
			if run.told != nil {
				d.idleEnded(run.told.Namespace, run.told.Name)
			}
			delete(d.idle.runs, id)
		}
	}
	for id := range d.idle.noSeries {
		if !dark[id] {
			delete(d.idle.noSeries, id)
		}
	}
	return out, nil
}

// runFor returns the job's idle run that began at start, the one remembered when it is the
// same run (it began before the last round saw it, give or take a step), else a new one.
func (s *idleState) runFor(job string, start, now time.Time, step time.Duration) *idleRun {
	if r := s.runs[job]; r != nil && !start.After(r.seen.Add(step)) {
		r.seen = now
		return r
	}
	r := &idleRun{start: start, seen: now}
	s.runs[job] = r
	return r
}

// idleAct warns about, reports or pauses a job that rule r finds idle for j.Now, once per run.
func (d *Daemon) idleAct(ctx context.Context, r *review.IdleRule, j usage.IdleJob, run *idleRun) (IdleAction, bool) {
	ref := edit.JobRef{Namespace: j.Namespace, Name: j.Name}
	idleNow := time.Duration(j.Now)
	// A run is told as long as the rule's time once it has reached it: the audit's window,
	// and so the run it sees, ends a round past it.
	what := fmt.Sprintf("idle below %s%% for %s on %s", percent(r.Threshold), idleDuration(min(idleNow, r.For)), gpusOf(j))
	act := IdleAction{Job: ref, Rule: r.Name, Reason: ReasonIdleGPU}
	switch {
	case run.acted:
		return act, false
	case idleNow < r.For:
		if run.warned {
			return act, false
		}
		run.warned = true
		verb := "reports"
		if r.Action == review.IdlePause {
			verb = "pauses"
		}
		act.Message = fmt.Sprintf("%s; gpuctl %s it at %s by policy %s", what, verb, idleDuration(r.For), r.Name)
		d.opts.Log.Warn("idle policy: job idle", "job", ref.String(), "rule", r.Name, "message", act.Message)
	case r.Action != review.IdlePause:
		run.acted = true
		act.Message = fmt.Sprintf("%s, the time of policy %s (action report)", what, r.Name)
		d.opts.Log.Warn("idle policy: job idle", "job", ref.String(), "rule", r.Name, "message", act.Message)
	default:
		res, err := d.Write(ctx, WriteRequest{Verb: VerbPause, By: idleWriter, Job: ref,
			Message: fmt.Sprintf("gpuctl: pause job %s (idle %s%% for %s on %s)", ref, percent(j.NowPeak), idleDuration(r.For), gpusTimes(j))})
		var unchanged *edit.UnchangedError
		var disabled *WritesDisabledError
		switch {
		case errors.As(err, &unchanged):
			run.acted = true // paused already, by someone or an earlier round
			d.opts.Log.Info("idle policy: job idle, paused already", "job", ref.String(), "rule", r.Name)
			return act, false
		case errors.As(err, &disabled):
			run.acted = true // no write can be made: told once a run
			d.opts.Log.Error("idle policy: cannot pause an idle job", "job", ref.String(), "rule", r.Name, "err", err)
			return act, false
		case err != nil:
			d.opts.Log.Error("idle policy: cannot pause an idle job; the next round tries again", "job", ref.String(), "rule", r.Name, "err", err)
			return act, false
		}
		run.acted = true
		act.Reason, act.Commit = ReasonIdlePaused, res.Commit
		act.Message = fmt.Sprintf("%s: gpuctl paused it by policy %s", what, r.Name)
		switch {
		case res.Proposed:
			act.Message += " in a pull request (" + res.Branch + "), to be merged"
		case res.Commit != "":
			act.Message += " in commit " + humanize.Revision(res.Commit)
		}
		act.Message += "; gpuctl resume job " + ref.String() + " undoes it"
		d.opts.Log.Warn("idle policy: paused an idle job", "job", ref.String(), "rule", r.Name, "commit", humanize.Revision(res.Commit))
	}
	d.idleEvent(ctx, j, act)
	if act.Reason == ReasonIdleGPU {
		run.told = &ref
	}
	return act, true
}

// idleNoSeries tells once about a job whose GPUs have no series.
func (d *Daemon) idleNoSeries(ctx context.Context, r *review.IdleRule, j usage.IdleJob) (IdleAction, bool) {
	if d.idle.noSeries[j.JobID] {
		return IdleAction{}, false
	}
	d.idle.noSeries[j.JobID] = true
	act := IdleAction{Job: edit.JobRef{Namespace: j.Namespace, Name: j.Name}, Rule: r.Name, Reason: ReasonNoGPUMetrics,
		Message: fmt.Sprintf("no GPU metrics in Prometheus for its %s: its use is unknown, and policy %s does not pause it", gpusOf(j), r.Name)}
	d.opts.Log.Warn("idle policy: job without GPU metrics", "job", act.Job.String(), "rule", r.Name)
	d.idleEvent(ctx, j, act)
	return act, true
}

// idleEvent records a Warning Event on the job's workload object.
func (d *Daemon) idleEvent(ctx context.Context, j usage.IdleJob, act IdleAction) {
	ref := d.workloadRef(ctx, j.Namespace, j.Name, j.Kind)
	now := metav1.NewTime(d.opts.Now())
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", j.Name, now.UnixNano()), Namespace: j.Namespace},
		InvolvedObject: ref, Reason: act.Reason, Message: act.Message, Type: corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: keys.ReconcilerFieldManager, Host: d.opts.Render.Cluster},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
		ReportingController: keys.ReconcilerFieldManager, ReportingInstance: d.opts.Identity,
	}
	if _, err := d.opts.Store.Kube.CoreV1().Events(j.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		d.opts.Log.Warn("idle policy: cannot record an event", "job", act.Job.String(), "reason", act.Reason, "err", err)
	}
	d.alertIdle(ref.Kind, act)
}

// workloadRef is the object reference of a job's workload object: its Job (or JobSet, for
// a training that has no Job of its name), Deployment or StatefulSet, with its uid when found.
func (d *Daemon) workloadRef(ctx context.Context, ns, name, kind string) corev1.ObjectReference {
	ref := corev1.ObjectReference{Namespace: ns, Name: name}
	kube := d.opts.Store.Kube
	var meta *metav1.ObjectMeta
	switch kind {
	case render.KindTraining:
		ref.APIVersion, ref.Kind = "batch/v1", "Job"
		if j, err := kube.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
			meta = &j.ObjectMeta
		} else {
			ref.APIVersion, ref.Kind = render.JobSetAPIVersion, render.JobSetKind // no typed client: no uid
		}
	case render.KindNotebook:
		ref.APIVersion, ref.Kind = "apps/v1", "StatefulSet"
		if s, err := kube.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
			meta = &s.ObjectMeta
		}
	default:
		ref.APIVersion, ref.Kind = "apps/v1", "Deployment"
		if dep, err := kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
			meta = &dep.ObjectMeta
		}
	}
	if meta != nil {
		ref.UID, ref.ResourceVersion = meta.UID, meta.ResourceVersion
	}
	return ref
}

// gpuPods lists the running pods of gpuctl's jobs that request GPUs, but those being deleted
// (a paused job's): one LIST.
func (d *Daemon) gpuPods(ctx context.Context) ([]usage.Pod, error) {
	list, err := d.opts.Store.Kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{keys.ManagedBy: keys.ManagedByValue}).String(),
		FieldSelector: fields.OneTermEqualSelector("status.phase", string(corev1.PodRunning)).String()})
	if err != nil {
		return nil, fmt.Errorf("list the running pods of gpuctl's jobs: %w", err)
	}
	var out []usage.Pod
	for i := range list.Items {
		p := &list.Items[i]
		gpu := object.PodRequests(&p.Spec)[keys.ResourceGPU]
		name := p.Labels[keys.App]
		if gpu.Value() <= 0 || name == "" || p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
			continue
		}
		pool := p.Labels[keys.Pool]
		if pool == "" {
			pool = keys.DefaultPool
		}
		out = append(out, usage.Pod{JobID: p.Namespace + "." + name, Namespace: p.Namespace, Name: name, Kind: p.Labels[keys.JobType],
			Pool: pool, GPUType: p.Spec.NodeSelector[keys.GPUType], Pod: p.Name, Phase: string(p.Status.Phase), GPU: gpu.Value(), Rank: -1})
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].JobID < out[j].JobID || out[i].JobID == out[j].JobID && out[i].Pod < out[j].Pod
	})
	return out, nil
}

// idlePolicy reads gpuctl-policy.yaml at the root of the last fetched revision; nil when there
// is none or it is invalid (logged once: a pull request's review reports its errors).
func (d *Daemon) idlePolicy() *review.Policy {
	d.mu.Lock()
	dir := d.lastRev.Dir
	d.mu.Unlock()
	if dir == "" {
		return nil
	}
	file := filepath.Join(dir, review.PolicyFile)
	d.tree.RLock()
	data, err := d.opts.FS.ReadFile(file)
	d.tree.RUnlock()
	if err != nil {
		if !d.opts.FS.Exists(file) || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		d.idlePolicyError(err.Error())
		return nil
	}
	p, err := review.ParsePolicy(review.PolicyFile, data)
	if err != nil {
		d.idlePolicyError(err.Error())
		return nil
	}
	d.idle.policyErr = ""
	return p
}

func (d *Daemon) idlePolicyError(msg string) {
	if msg != d.idle.policyErr {
		d.idle.policyErr = msg
		d.opts.Log.Error("idle policy: "+review.PolicyFile+" is invalid; no idle rule applies until it is fixed", "err", msg)
	}
}

// teamGPU is a row of gpuctl_team_gpus.
type teamGPU struct {
	team, pool               string
	requested, busy, idleGPU float64
}

// teamGPUs sums per team (namespace) and pool the GPUs that the running pods request, and
// of their GPUs those busy and idle by the threshold of the job's idle rule (the default
// without one). A GPU without a series is neither.
func teamGPUs(pods []usage.Pod, gpus []usage.GPU, policy *review.Policy) []teamGPU {
	type key struct{ team, pool string }
	rows := map[key]*teamGPU{}
	byPod := map[string]usage.Pod{}
	var order []key
	for _, p := range pods {
		k := key{p.Namespace, p.Pool}
		if rows[k] == nil {
			rows[k] = &teamGPU{team: p.Namespace, pool: p.Pool}
			order = append(order, k)
		}
		rows[k].requested += float64(p.GPU)
		byPod[p.Namespace+"/"+p.Pod] = p
	}
	for _, g := range gpus {
		p, ok := byPod[g.PodKey()]
		if !ok || !g.HasUtil {
			continue
		}
		threshold := usage.DefaultIdleThreshold
		if r := policy.IdleRuleFor(p.Namespace, p.Kind); r != nil {
			threshold = r.Threshold
		}
		row := rows[key{p.Namespace, p.Pool}]
		if g.Idle(threshold) {
			row.idleGPU++
		} else {
			row.busy++
		}
	}
	out := make([]teamGPU, 0, len(order))
	for _, k := range order {
		out = append(out, *rows[k])
	}
	return out
}

// percent writes a utilization without a needless fraction: 5, 2.5.
func percent(v float64) string { return strings.TrimSuffix(fmt.Sprintf("%.1f", v), ".0") }

// idleDuration writes a run as a person reads it, to the minute: 2h, 1h40m, 45m.
func idleDuration(d time.Duration) string {
	d = d.Round(time.Minute)
	h, m := int64(d/time.Hour), int64(d%time.Hour/time.Minute)
	switch {
	case h == 0:
		return fmt.Sprintf("%dm", m)
	case m == 0:
		return fmt.Sprintf("%dh", h)
	}
	return fmt.Sprintf("%dh%dm", h, m)
}

// gpusOf is "4 GPUs (h100)", or "4 GPUs" without a GPU type.
func gpusOf(j usage.IdleJob) string {
	s := humanize.Plural(j.GPUs, "GPU")
	if j.GPUType != "" {
		s += " (" + j.GPUType + ")"
	}
	return s
}

// gpusTimes is "4 × h100", or "4 GPUs" without a GPU type.
func gpusTimes(j usage.IdleJob) string {
	if j.GPUType == "" {
		return humanize.Plural(j.GPUs, "GPU")
	}
	return fmt.Sprintf("%d × %s", j.GPUs, j.GPUType)
}
