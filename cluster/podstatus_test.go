package cluster

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func waiting(reason, msg string) corev1.ContainerState {
	return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}
}

func terminated(reason string, code int32) corev1.ContainerState {
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: reason, ExitCode: code}}
}

var running = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}

// statusPod is a pod of the phase, on a node, with one container per state (named main, side).
func statusPod(phase corev1.PodPhase, states ...corev1.ContainerState) *corev1.Pod {
	p := &corev1.Pod{Spec: corev1.PodSpec{NodeName: "gpu-1"}, Status: corev1.PodStatus{Phase: phase}}
	for i, s := range states {
		name := []string{"main", "side"}[i]
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: name})
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses,
			corev1.ContainerStatus{Name: name, State: s, Ready: s.Running != nil})
	}
	return p
}

func TestPodStatus(t *testing.T) {
	unschedulable := statusPod(corev1.PodPending)
	unschedulable.Spec.NodeName = ""
	unschedulable.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: "Unschedulable", Message: "0/5 nodes are available: 5 Insufficient nvidia.com/gpu. preemption: 0/5 nodes are available: 5 No preemption victims found for incoming pod."}}
	deleting := statusPod(corev1.PodRunning, running)
	deleting.DeletionTimestamp = &metav1.Time{}
	evicted := statusPod(corev1.PodFailed)
	evicted.Status.Reason, evicted.Status.Message = "Evicted", "The node was low on resource: memory."
	initWaiting := statusPod(corev1.PodPending, waiting("PodInitializing", ""))
	initWaiting.Spec.InitContainers = []corev1.Container{{Name: "fetch"}}
	initWaiting.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "fetch", State: waiting("ImagePullBackOff", "")}}
	initRunning := statusPod(corev1.PodPending, waiting("PodInitializing", ""))
	initRunning.Spec.InitContainers = []corev1.Container{{Name: "fetch"}, {Name: "unpack"}}
	initRunning.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "fetch", State: terminated("Completed", 0)},
		{Name: "unpack", State: running}}

	tests := map[string]struct {
		pod            *corev1.Pod
		status, reason string
	}{
		"running":     {statusPod(corev1.PodRunning, running), "Running", ""},
		"unscheduled": {unschedulable, "Pending", "0/5 nodes: insufficient nvidia.com/gpu"},
		"creating":    {statusPod(corev1.PodPending, waiting("ContainerCreating", "")), "ContainerCreating", ""},
		"image pull back-off": {statusPod(corev1.PodPending, waiting("ImagePullBackOff", `Back-off pulling image "registry.example/x:1"`)),
			"ImagePullBackOff", `container main: the image cannot be pulled: check environment.image and the registry's credentials; Back-off pulling image "registry.example/x:1"`},
		"image pull error": {statusPod(corev1.PodPending, waiting("ErrImagePull", "")),
			"ErrImagePull", "container main: the image cannot be pulled: check environment.image and the registry's credentials"},
		"crash loop": {statusPod(corev1.PodRunning, waiting("CrashLoopBackOff", "")),
			"CrashLoopBackOff", "container main: the container keeps exiting and is restarted with a growing delay: see gpuctl logs --previous"},
		"oom killed":             {statusPod(corev1.PodFailed, terminated("OOMKilled", 137)), "OOMKilled", "container main: out of memory: raise resources.memory; exit code 137"},
		"error":                  {statusPod(corev1.PodFailed, terminated("Error", 1)), "Error", "container main: exit code 1"},
		"exit code":              {statusPod(corev1.PodFailed, terminated("", 3)), "ExitCode:3", "container main: exit code 3"},
		"completed":              {statusPod(corev1.PodSucceeded, terminated("Completed", 0)), "Completed", ""},
		"first at fault":         {statusPod(corev1.PodRunning, waiting("CrashLoopBackOff", ""), terminated("Error", 2)), "CrashLoopBackOff", "container main: the container keeps exiting and is restarted with a growing delay: see gpuctl logs --previous"},
		"completed and one runs": {statusPod(corev1.PodRunning, terminated("Completed", 0), running), "NotReady", ""},
		"terminating":            {deleting, "Terminating", ""},
		"evicted":                {evicted, "Evicted", "the node ran short of a resource and evicted the pod; The node was low on resource: memory."},
		"init image":             {initWaiting, "Init:ImagePullBackOff", "container fetch: the image cannot be pulled: check environment.image and the registry's credentials"},
		"init running":           {initRunning, "Init:1/2", ""},
		"no status yet":          {&corev1.Pod{}, "Pending", ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := PodStatus(tc.pod); got != tc.status {
				t.Errorf("status %q, want %q", got, tc.status)
			}
			if got := PodReason(tc.pod); got != tc.reason {
				t.Errorf("reason %q, want %q", got, tc.reason)
			}
		})
	}
}

func TestSchedulingMessage(t *testing.T) {
	tests := map[string]string{
		"0/5 nodes are available: 5 Insufficient nvidia.com/gpu. preemption: 0/5 nodes are available: 5 No preemption victims found for incoming pod.":      "0/5 nodes: insufficient nvidia.com/gpu",
		"0/4 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }, 3 Insufficient nvidia.com/gpu. preemption: not helpful": "0/4 nodes: 1 untolerated taint, 3 insufficient nvidia.com/gpu",
		"0/3 nodes are available: 2 node(s) didn't match Pod's node affinity/selector, 1 Insufficient cpu.":                                                 "0/3 nodes: 2 didn't match Pod's node affinity/selector, 1 insufficient cpu",
		"0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector.":                                                                     "0/2 nodes: didn't match Pod's node affinity/selector",
		"no nodes available to schedule pods":                            "no nodes available to schedule pods",
		"pod has unbound immediate PersistentVolumeClaims.\n  try later": "pod has unbound immediate PersistentVolumeClaims. try later",
	}
	for in, want := range tests {
		if got := SchedulingMessage(in); got != want {
			t.Errorf("SchedulingMessage(%q)\n = %q\nwant %q", in, got, want)
		}
	}
}
