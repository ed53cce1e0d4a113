package render

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ruleKueueLabels is the tenancy rule on Kueue's labels and annotations (keys.KueuePrefix):
// a tenant names only its namespace's LocalQueue and a gpuctl WorkloadPriorityClass; every
// other key is Kueue's own (a pod group, the workload it belongs to, a queue of another team
// through an admission check...). It is not a pod policy rule: Kueue itself writes its keys
// on the jobs and pods it admits, so the admission policy cannot refuse them.
const ruleKueueLabels = "kueue-labels"

// kueueMetadataPaths are where an object of a kind carries metadata that Kueue reads: the
// object's own, a CronJob's job template, and the pod template.
func kueueMetadataPaths(kind string) []string {
	paths := []string{"metadata"}
	if kind == "CronJob" {
		paths = append(paths, "spec.jobTemplate.metadata")
	}
	if tp, ok := object.PodTemplatePath(kind); ok && len(tp) > 0 {
		paths = append(paths, strings.Join(tp, ".")+".metadata")
	}
	return paths
}

// kueueKeyViolations checks the kueue.x-k8s.io/ labels and annotations of a tenant object:
// only keys.KueueQueueName = keys.KueueLocalQueue and keys.KueuePriorityClass = one of
// gpuctl's classes (gpuctl-high only where allowHigh) are allowed. Violations come in field
// order, with Rule ruleKueueLabels.
func kueueKeyViolations(u *unstructured.Unstructured, namespace string, allowHigh bool) []Violation {
	var out []Violation
	classes := []string{keys.PriorityClassLow, keys.PriorityClassMedium, keys.PriorityClassHigh}
	for _, base := range kueueMetadataPaths(u.GetKind()) {
		meta := u.Object
		for _, k := range strings.Split(base, ".") {
			meta = mapAt(meta[k])
		}
		for _, part := range []string{"labels", "annotations"} {
			m := mapAt(meta[part])
			for _, k := range sortedKeys(m) {
				if !strings.HasPrefix(k, keys.KueuePrefix) {
					continue
				}
				field := base + "." + part + "[" + k + "]"
				add := func(format string, args ...any) {
					out = append(out, Violation{Rule: ruleKueueLabels, Field: field, Message: fmt.Sprintf(format, args...)})
				}
				v, _ := m[k].(string)
				switch {
				case k == keys.KueueQueueName && v != keys.KueueLocalQueue:
					add("queue %q is not the namespace's queue: only %s (the team's LocalQueue) may be named", v, keys.KueueLocalQueue)
				case k == keys.KueuePriorityClass && v == keys.PriorityClassHigh && !allowHigh:
					add("%s is not allowed in namespace %q (tenancy.highPriorityNamespaces)", keys.PriorityClassHigh, namespace)
				case k == keys.KueuePriorityClass && !slices.Contains(classes, v):
					add("only the WorkloadPriorityClasses %s are allowed", strings.Join(classes, ", "))
				case k != keys.KueueQueueName && k != keys.KueuePriorityClass:
					add("%s is Kueue's own key; a tenant sets only %s and %s", k, keys.KueueQueueName, keys.KueuePriorityClass)
				}
			}
		}
	}
	return out
}
