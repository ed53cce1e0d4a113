package render

import (
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// The retries of a training job (docs/format.md §4.4): what is not the run's fault is run
// again, what is its fault fails the job at once unless the file declares the exit code
// retryable. Kubernetes' podFailurePolicy says it; its rules apply to pods that reached a
// terminal phase (restartPolicy Never), first match wins.

// Values of job.retries.onDisruption.
const (
	// DisruptionRetry runs a disrupted pod again without counting it (the default).
	DisruptionRetry = "retry"
	// DisruptionCount runs it again, counted against job.retries.max.
	DisruptionCount = "count"
	// DisruptionFail fails the job.
	DisruptionFail = "fail"
)

// disruptionValues are the accepted values of job.retries.onDisruption.
var disruptionValues = []string{DisruptionRetry, DisruptionCount, DisruptionFail}

// Retry defaults and bounds.
const (
	// DefaultMaxRetries is job.retries.max when it is not written.
	DefaultMaxRetries = 3
	// maxRetries bounds job.retries.max: a run retried more often is a crash loop on GPUs.
	maxRetries = 100
)

// Environment variables of every training attempt: the counts that Kubernetes writes on the
// pod of an Indexed Job with backoffLimitPerIndex, read through the downward API. The
// attempt's number is 1 + both (an empty GPUCTL_DISRUPTED_ATTEMPTS is 0).
const (
	// EnvFailedAttempts is the number of earlier attempts whose failure was counted.
	EnvFailedAttempts = "GPUCTL_FAILED_ATTEMPTS"
	// EnvDisruptedAttempts is the number of earlier attempts that were disrupted and not
	// counted; empty until the first one.
	EnvDisruptedAttempts = "GPUCTL_DISRUPTED_ATTEMPTS"
)

// retryCounts tells whether a job counts failures against a limit: it declares retryable
// exit codes, or counts disruptions.
func retryCounts(r Retries) bool {
	return len(r.OnExitCodes) > 0 || r.OnDisruption == DisruptionCount
}

// retryLimit is the number of counted failures that are retried: backoffLimitPerIndex (or,
// for a Job that is not indexed, backoffLimit). 0 when nothing is counted, so that a failure
// that no rule matches (no exit code, no disruption) fails the job at once.
func retryLimit(r Retries, has func(field string) bool) int32 {
	switch {
	case !retryCounts(r):
		return 0
	case has("job.retries.max"):
		return int32(r.Max)
	}
	return DefaultMaxRetries
}

// podFailurePolicy returns the rules of a training Job's retries, in order: a disruption
// (the pod's DisruptionTarget condition) per onDisruption; a retryable exit code is counted;
// any other exit code but 0 fails the index at once. fail is FailIndex, not FailJob: the Job
// controller checks FailIndex only on the pods it still tracks, so a pod that a suspension
// stopped (Kueue's preemption, gpuctl pause: the controller stops tracking it before it
// deletes it, and the kubelet ends it with SIGTERM's 143) never fails the job, while FailJob
// would. FailIndex needs backoffLimitPerIndex; in a Job of one index it fails the Job.
func podFailurePolicy(r Retries) *batchv1.PodFailurePolicy {
	onDisruption := batchv1.PodFailurePolicyActionIgnore
	switch r.OnDisruption {
	case DisruptionCount:
		onDisruption = batchv1.PodFailurePolicyActionCount
	case DisruptionFail:
		onDisruption = batchv1.PodFailurePolicyActionFailIndex
	}
	rules := []batchv1.PodFailurePolicyRule{{
		Action: onDisruption,
		OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{
			Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}},
	}}
	if codes := exitCodes(r.OnExitCodes); len(codes) > 0 {
		rules = append(rules, batchv1.PodFailurePolicyRule{
			Action:      batchv1.PodFailurePolicyActionCount,
			OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: codes},
		})
	}
	rules = append(rules, batchv1.PodFailurePolicyRule{
		Action:      batchv1.PodFailurePolicyActionFailIndex,
		OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpNotIn, Values: []int32{0}},
	})
	return &batchv1.PodFailurePolicy{Rules: rules}
}

// exitCodes returns the codes sorted and without repeats, as the API requires.
func exitCodes(codes []int) []int32 {
	out := make([]int32, 0, len(codes))
	for _, c := range codes {
		out = append(out, int32(c))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// retryJob makes spec a Job of indexes whose pods are retried per the workload's
// job.retries: podFailurePolicy, backoffLimitPerIndex (the limit of counted failures, per
// index; backoffLimit is left to its default, which then counts nothing), and the attempt
// counts in the pods' environment come with it (attemptEnv). spec must be indexed.
func (w workloadInput) retryJob(spec *batchv1.JobSpec) {
	spec.BackoffLimit = nil
	spec.BackoffLimitPerIndex = ptr(retryLimit(w.Job.Retries, w.Has))
	spec.PodFailurePolicy = podFailurePolicy(w.Job.Retries)
}

// attemptEnv is the environment that tells an attempt of a retried Job how many came before
// it (EnvFailedAttempts, EnvDisruptedAttempts). Kubernetes writes the annotations only on
// the pods of an Indexed Job with backoffLimitPerIndex.
func attemptEnv() []corev1.EnvVar {
	annotation := func(name, key string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
			FieldPath: "metadata.annotations['" + key + "']"}}}
	}
	return []corev1.EnvVar{
		annotation(EnvFailedAttempts, batchv1.JobIndexFailureCountAnnotation),
		annotation(EnvDisruptedAttempts, batchv1.JobIndexIgnoredFailureCountAnnotation),
	}
}
