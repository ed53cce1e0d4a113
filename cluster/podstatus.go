package cluster

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/gpuctl/gpuctl/internal/markdown"
	corev1 "k8s.io/api/core/v1"
)

// Pod status words beyond the pod phases, as kubectl prints them.
const (
	// PodTerminating is a pod being deleted.
	PodTerminating = "Terminating"
	// PodCompleted is a pod whose containers all exited 0.
	PodCompleted = "Completed"
	// PodNotReady is a pod one of whose containers completed while another runs unready.
	PodNotReady = "NotReady"
)

// statusHints explain the waiting and terminated reasons of containers and the reasons of
// pods that a person meets most, in the words of a gpuctl file where one is at fault.
var statusHints = map[string]string{
	"ImagePullBackOff":           "the image cannot be pulled: check environment.image and the registry's credentials",
	"ErrImagePull":               "the image cannot be pulled: check environment.image and the registry's credentials",
	"InvalidImageName":           "environment.image is not a valid image name",
	"ErrImageNeverPull":          "the image is not on the node and the pull policy is Never",
	"CrashLoopBackOff":           "the container keeps exiting and is restarted with a growing delay: see gpuctl logs --previous",
	"CreateContainerConfigError": "a Secret or ConfigMap that the pod refers to is missing",
	"CreateContainerError":       "the container could not be created",
	"RunContainerError":          "the container could not be started: check environment.command",
	"ContainerCannotRun":         "the container could not be started: check environment.command",
	"OOMKilled":                  "out of memory: raise resources.memory",
	"Evicted":                    "the node ran short of a resource and evicted the pod",
	"DeadlineExceeded":           "the pod ran longer than its deadline",
}

// PodStatus is a pod's status in the words kubectl prints in its STATUS column: the reason of
// a waiting container (ImagePullBackOff, CrashLoopBackOff, ErrImagePull, ContainerCreating),
// of a terminated one (OOMKilled, Error, Completed), "Init:<reason>" while an init container
// is at fault, Terminating while the pod is deleted, else the pod's reason (Evicted) or phase
// (Pending, Running, Succeeded, Failed).
func PodStatus(p *corev1.Pod) string {
	s, _ := podState(p)
	return s
}

// PodReason explains PodStatus in one line, or is "": the scheduler's message, shortened
// (SchedulingMessage), for a pod that no node can take; what a container's reason means and
// the exit code for a container at fault; the pod's own message (an eviction).
func PodReason(p *corev1.Pod) string {
	_, r := podState(p)
	return r
}

// podState computes PodStatus and PodReason by kubectl's rules (its pod printer), the
// containers examined from the last to the first so that the first at fault wins.
func podState(p *corev1.Pod) (status, reason string) {
	status = string(p.Status.Phase)
	if p.Status.Reason != "" {
		status = p.Status.Reason
		reason = join(statusHints[status], p.Status.Message)
	}
	if p.Status.Phase == corev1.PodPending && p.Spec.NodeName == "" {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Message != "" {
				reason = SchedulingMessage(c.Message)
			}
		}
	}
	initializing := false
	for i, c := range p.Status.InitContainerStatuses {
		w, t := c.State.Waiting, c.State.Terminated
		switch {
		case t != nil && t.ExitCode == 0:
			continue
		case c.Started != nil && *c.Started && isSidecar(p, c.Name):
			continue
		case t != nil:
			status, reason = "Init:"+exitWord(t), containerHint(c.Name, t.Reason, t.ExitCode, t.Message)
		case w != nil && w.Reason != "" && w.Reason != "PodInitializing":
			status, reason = "Init:"+w.Reason, containerHint(c.Name, w.Reason, 0, w.Message)
		default:
			status = fmt.Sprintf("Init:%d/%d", i, len(p.Spec.InitContainers))
		}
		initializing = true
		break
	}
	if !initializing || podCondition(p, corev1.PodInitialized) {
		running := false
		for i := len(p.Status.ContainerStatuses) - 1; i >= 0; i-- {
			c := p.Status.ContainerStatuses[i]
			w, t := c.State.Waiting, c.State.Terminated
			switch {
			case w != nil && w.Reason != "":
				status, reason = w.Reason, containerHint(c.Name, w.Reason, 0, w.Message)
			case t != nil:
				status, reason = exitWord(t), containerHint(c.Name, t.Reason, t.ExitCode, t.Message)
			case c.Ready && c.State.Running != nil:
				running = true
			}
		}
		if status == PodCompleted && running {
			status, reason = PodNotReady, ""
			if podCondition(p, corev1.PodReady) {
				status = string(corev1.PodRunning)
			}
		}
	}
	if p.DeletionTimestamp != nil {
		status = PodTerminating
		if p.Status.Reason == "NodeLost" {
			status = "Unknown"
		}
	}
	if status == "" {
		status = string(corev1.PodPending)
	}
	return status, reason
}

// exitWord is a terminated container's reason, or Signal:<n> / ExitCode:<n> without one.
func exitWord(t *corev1.ContainerStateTerminated) string {
	switch {
	case t.Reason != "":
		return t.Reason
	case t.Signal != 0:
		return "Signal:" + strconv.Itoa(int(t.Signal))
	}
	return "ExitCode:" + strconv.Itoa(int(t.ExitCode))
}

// containerHint explains a container's reason: the hint of statusHints, "exit code N" for a
// failed exit, and the runtime's message, each only when there is one. Completed needs none.
func containerHint(container, reason string, exitCode int32, message string) string {
	if reason == PodCompleted && exitCode == 0 {
		return ""
	}
	h := statusHints[reason]
	if exitCode != 0 {
		h = join(h, "exit code "+strconv.Itoa(int(exitCode)))
	}
	h = join(h, oneLine(message))
	if h == "" {
		return ""
	}
	return "container " + container + ": " + h
}

// join joins the non-empty parts with "; ".
func join(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, "; ")
}

// oneLine keeps text from the cluster (a message, an event) on one line of a terminal: its
// white space collapsed, other control characters (a terminal's escape sequences) written as
// \xNN or \uNNNN.
func oneLine(s string) string { return markdown.Words(s) }

func podCondition(p *corev1.Pod, t corev1.PodConditionType) bool {
	c := podConditionOf(p, t)
	return c != nil && c.Status == corev1.ConditionTrue
}

// isSidecar reports whether the named init container restarts always (a sidecar).
func isSidecar(p *corev1.Pod, name string) bool {
	for _, c := range p.Spec.InitContainers {
		if c.Name == name {
			return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		}
	}
	return false
}

var (
	// schedulingHead is the scheduler's "0/5 nodes are available: " opening.
	schedulingHead = regexp.MustCompile(`^(\d+)/(\d+) nodes are available: `)
	// schedulingItem is one "<count> <why>" of its list.
	schedulingItem = regexp.MustCompile(`^(\d+) (.+)$`)
	// braces are the taint and label details inside a reason, e.g. {node.kubernetes.io/not-ready: }.
	braces = regexp.MustCompile(`\s*\{[^}]*\}`)
)

// SchedulingMessage shortens the scheduler's message of a pod that no node can take to what a
// person acts on: "0/5 nodes are available: 1 node(s) had untolerated taint {x: }, 4
// Insufficient nvidia.com/gpu. preemption: ..." becomes "0/5 nodes: 4 insufficient
// nvidia.com/gpu, 1 untolerated taint", the counts left out where one reason holds for every
// node: "0/5 nodes: insufficient nvidia.com/gpu". A message of another form stays as it is,
// on one line.
func SchedulingMessage(msg string) string {
	msg = oneLine(msg)
	m := schedulingHead.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	rest := msg[len(m[0]):]
	if i := strings.Index(rest, ". preemption:"); i >= 0 {
		rest = rest[:i]
	}
	rest = braces.ReplaceAllString(strings.TrimSuffix(rest, "."), "")
	var items []string
	for _, it := range strings.Split(rest, ", ") {
		it = strings.TrimSpace(it)
		n := ""
		if c := schedulingItem.FindStringSubmatch(it); c != nil {
			n, it = c[1], c[2]
		}
		it = strings.TrimPrefix(strings.TrimPrefix(it, "node(s) had "), "node(s) ")
		if it == "" {
			continue
		}
		it = strings.ToLower(it[:1]) + it[1:]
		if n != "" && !(len(items) == 0 && n == m[2] && !strings.Contains(rest, ", ")) {
			it = n + " " + it
		}
		items = append(items, it)
	}
	return m[1] + "/" + m[2] + " nodes: " + strings.Join(items, ", ")
}
