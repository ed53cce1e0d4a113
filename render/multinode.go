package render

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Multi-node training (node_count > 1, docs/format.md §2.2). A torchrun or DeepSpeed job
// with a static rendezvous cannot take back one replaced rank, so a lost rank must restart
// all of them. Kubernetes' Job cannot: its podFailurePolicy actions (FailJob, FailIndex,
// Ignore, Count) replace one index or end the Job, none restarts the other indexes
// (test/multinode measures it). Config.MultiNode chooses what is rendered.

// The values of Config.MultiNode.
const (
	// MultiNodeJob renders an Indexed Job (the default, "" too; needs no component): a lost
	// rank fails the whole job at once, never retried, and no rank waits on a peer that is
	// gone.
	MultiNodeJob = "job"
	// MultiNodeJobSet renders a JobSet (kubernetes-sigs/jobset, which the cluster must run):
	// a lost rank restarts all ranks together, per job.retries.
	MultiNodeJobSet = "jobset"
)

// multiNodeValues are the accepted values of Config.MultiNode.
var multiNodeValues = []string{MultiNodeJob, MultiNodeJobSet}

// JobSet's API as gpuctl renders it (jobset.x-k8s.io/v1alpha2).
const (
	// JobSetAPIVersion is the apiVersion of a JobSet.
	JobSetAPIVersion = "jobset.x-k8s.io/v1alpha2"
	// JobSetKind is its kind.
	JobSetKind = "JobSet"
	// JobSetReplicatedJob is the name of the one replicated Job of a rendered JobSet: its Job
	// is <name>-node-0 and the pod of rank r is <name>-node-0-r-<suffix>, host
	// <name>-node-0-r in the JobSet's subdomain.
	JobSetReplicatedJob = "node"
	// jobsetRestartsAnnotation is the restart count that the JobSet controller writes on the
	// pods of each attempt.
	jobsetRestartsAnnotation = "jobset.sigs.k8s.io/restart-attempt"
)

// JobSetControllerUser is the identity of the JobSet controller as its release manifests
// install it: with multiNode jobset, the admission policy lets it set the owners of the Jobs
// and the Service it makes in tenant namespaces, as it lets Kueue (tenancy.controllers names
// another).
const JobSetControllerUser = "system:serviceaccount:jobset-system:jobset-controller-manager"

// EnvRestarts is the environment variable of a JobSet's pods that holds how many times the
// whole job was restarted before this attempt (0 on the first).
const EnvRestarts = "GPUCTL_RESTARTS"

// The child Job's failure messages that tell the JobSet why it failed: Kubernetes' Job
// controller writes them when a podFailurePolicy rule with action FailJob matches.
const (
	disruptionMessage = "has condition DisruptionTarget matching FailJob rule"
	exitCodeMessage   = "failed with exit code [0-9]+ matching FailJob rule"
)

// multiNode is how the configuration renders multi-node training: MultiNodeJob or
// MultiNodeJobSet.
func (c *Config) multiNode() string {
	if c == nil || c.MultiNode == "" {
		return MultiNodeJob
	}
	return c.MultiNode
}

// buildJobSet renders a multi-node training job as a JobSet of one Indexed Job of node_count
// pods, which the JobSet controller recreates whole, all ranks together, when a rank is lost:
//
//   - the Job fails at once when a rank fails (backoffLimit 0); its podFailurePolicy fails it
//     with a message that says why: a disruption (DisruptionTarget) or a retryable exit code;
//   - the JobSet's failurePolicy reads that message: a disruption restarts the job per
//     job.retries.onDisruption (retry: not counted), a retryable exit code restarts it counted
//     against job.retries.max (maxRestarts), anything else fails it.
//
// job is the Job that buildTraining started (metadata, suspension); the JobSet controller
// makes the headless Service of the ranks' host names (its subdomain).
func buildJobSet(w workloadInput, job *batchv1.Job) []runtime.Object {
	n := w.Resources.NodeCount
	svc := serviceName(w.Job.Name)
	spec := job.Spec
	spec.CompletionMode = ptr(batchv1.IndexedCompletion)
	spec.Completions, spec.Parallelism = int32Ptr(n), int32Ptr(n)
	spec.BackoffLimit = int32Ptr(0)
	spec.Suspend = nil // the JobSet's, below
	spec.PodFailurePolicy = multiNodePodFailurePolicy(w.Job.Retries)
	master := w.Job.Name + "-" + JobSetReplicatedJob + "-0-0." + svc
	spec.Template = w.podTemplate(append(distributedEnv(w, master), restartsEnv()))
	spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	w.enqueue(&job.ObjectMeta, &spec.Template)
	child := toUnstructured(&batchv1.Job{Spec: spec})
	js := toUnstructured(&batchv1.Job{ObjectMeta: job.ObjectMeta})
	js.SetAPIVersion(JobSetAPIVersion)
	js.SetKind(JobSetKind)
	jsSpec := map[string]any{
		"network": map[string]any{"enableDNSHostnames": true, "subdomain": svc, "publishNotReadyAddresses": true},
		"replicatedJobs": []any{map[string]any{
			"name": JobSetReplicatedJob, "replicas": int64(1),
			"template": map[string]any{"spec": child.Object["spec"]},
		}},
		"successPolicy": map[string]any{"operator": "All"},
		"failurePolicy": jobsetFailurePolicy(w.Job.Retries, w.Has),
	}
	if job.Spec.Suspend != nil && *job.Spec.Suspend {
		jsSpec["suspend"] = true
	}
	js.Object["spec"] = jsSpec
	return []runtime.Object{js}
}

// multiNodePodFailurePolicy fails a rank's Job at once, with the message of a FailJob rule,
// when the rank was disrupted or exited with a retryable code; any other failure is counted
// and fails it through backoffLimit 0 (BackoffLimitExceeded).
func multiNodePodFailurePolicy(r Retries) *batchv1.PodFailurePolicy {
	rules := []batchv1.PodFailurePolicyRule{{
		Action:          batchv1.PodFailurePolicyActionFailJob,
		OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}},
	}}
	if codes := exitCodes(r.OnExitCodes); len(codes) > 0 {
		rules = append(rules, batchv1.PodFailurePolicyRule{
			Action:      batchv1.PodFailurePolicyActionFailJob,
			OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: codes},
		})
	}
	return &batchv1.PodFailurePolicy{Rules: rules}
}

// jobsetFailurePolicy is the JobSet's failurePolicy for job.retries: the rules that read the
// child Job's failure (multiNodePodFailurePolicy) and maxRestarts, the counted restarts.
func jobsetFailurePolicy(r Retries, has func(string) bool) map[string]any {
	onDisruption := "RestartJobSetAndIgnoreMaxRestarts"
	switch r.OnDisruption {
	case DisruptionCount:
		onDisruption = "RestartJobSet"
	case DisruptionFail:
		onDisruption = "FailJobSet"
	}
	rule := func(name, action, message string) map[string]any {
		return map[string]any{"name": name, "action": action,
			"onJobFailureReasons": []any{batchv1.JobReasonPodFailurePolicy}, "onJobFailureMessagePatterns": []any{message}}
	}
	rules := []any{rule("disruption", onDisruption, disruptionMessage)}
	if len(r.OnExitCodes) > 0 {
		rules = append(rules, rule("exitCode", "RestartJobSet", exitCodeMessage))
	}
	rules = append(rules, map[string]any{"name": "failure", "action": "FailJobSet"})
	return map[string]any{
		"maxRestarts": int64(retryLimit(r, has)),
		// The ranks of the last attempt are gone before the next starts: they hold the GPUs.
		"restartStrategy": "BlockingRecreate",
		"rules":           rules,
	}
}

// restartsEnv is EnvRestarts, read through the downward API.
func restartsEnv() corev1.EnvVar {
	return corev1.EnvVar{Name: EnvRestarts, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
		FieldPath: "metadata.annotations['" + jobsetRestartsAnnotation + "']"}}}
}
