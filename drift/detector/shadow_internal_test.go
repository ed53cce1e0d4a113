package detector

import (
	"testing"

	"github.com/gpuctl/gpuctl/internal/keys"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestMultiKueueCopyInAWorker: in a MultiKueue worker (EndSync's multiKueueWorker), Kueue's copy
// of a manager's job (MultiKueue's two labels and the manager's gpuctl labels) is the manager's,
// in Git there: no shadow. The same Job in a cluster that is no worker is a shadow (its labels
// are a claim anyone with kubectl can make; TestMultiKueueCopyIsNotAShadow deletes one), and so
// is, even in a worker, a Deployment with both labels (MultiKueue copies Jobs and JobSets only).
func TestMultiKueueCopyInAWorker(t *testing.T) {
	const ns = "alice"
	labels := map[string]string{keys.ApplySetPartOf: "applyset-of-the-manager-v1", keys.ManagedBy: keys.ManagedByValue,
		keys.MultiKueueOrigin: "multikueue", keys.KueuePrebuiltWorkload: "job-copy-1a2b3"}
	meta := &metav1.ObjectMeta{Name: "copy", Namespace: ns, Labels: labels}
	d := &Detector{}
	for _, c := range []struct {
		what   string
		worker bool
		kind   string
		shadow bool
	}{
		{"a worker's copy", true, "Job", false},
		{"the Job outside a worker", false, "Job", true},
		{"a Deployment with the labels in a worker", true, "Deployment", true},
	} {
		ds := &desiredState{namespaces: map[string]bool{ns: true}, partOf: "applyset-of-this-cluster-v1", multiKueueWorker: c.worker}
		why, shadow := d.isShadow(ds, c.kind, meta, nil, 1)
		if shadow != c.shadow {
			t.Errorf("%s: shadow %v (%s), want %v", c.what, shadow, why, c.shadow)
		}
	}
}
