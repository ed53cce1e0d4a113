package testcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// Pod logs: kwok answers the API server's pod-log requests (GET pods/{name}/log, kubectl logs)
// at the nodes' kubelet endpoint, from the file that a Logs object of the pod names for the
// container. WritePodLog creates that object and appends to the file, so a test reads back
// through the API server's real log path, following included.

// logsResource is kwok's Logs resource: per pod, the log files of its containers.
var logsResource = schema.GroupVersionResource{Group: "kwok.x-k8s.io", Version: "v1alpha1", Resource: "logs"}

// logServeTimeout bounds how long WritePodLog waits for kwok to serve a new log file.
const logServeTimeout = 30 * time.Second

// LogTarget is the log of one container of a pod on a fake node.
type LogTarget struct {
	Namespace, Pod, Container string
	// Previous writes the log of the container's previous instance (kubectl logs --previous).
	Previous bool
}

func (t LogTarget) String() string { return t.Namespace + "/" + t.Pod + "/" + t.Container }

// WritePodLog appends lines to a container's log, as the container runtime would write them
// (stdout, timestamped now). The pod must be bound to a fake node. The first write to a
// container registers its log files with kwok and waits until the API server serves them; once
// it returns, GET pods/{pod}/log?container=... returns the lines, and a request that follows
// the log sees each later write as it happens.
func (c *Cluster) WritePodLog(ctx context.Context, t LogTarget, lines ...string) error {
	current, previous := c.podLogFiles(t)
	if err := c.registerPodLog(ctx, t, current, previous); err != nil {
		return fmt.Errorf("pod log %s: %w", t, err)
	}
	path := current
	if t.Previous {
		path = previous
	}
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "%s stdout F %s\n", time.Now().UTC().Format(time.RFC3339Nano), l)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("pod log %s: %w", t, err)
	}
	_, err = f.WriteString(b.String())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("pod log %s: %w", t, err)
	}
	return nil
}

// podLogFiles are the files of a container's current and previous logs.
func (c *Cluster) podLogFiles(t LogTarget) (current, previous string) {
	dir := filepath.Join(c.Dir, "podlogs", t.Namespace, t.Pod)
	return filepath.Join(dir, t.Container+".log"), filepath.Join(dir, t.Container+".previous.log")
}

// registerPodLog creates the container's log files and lists them in the pod's Logs object,
// once, then waits until the API server serves the container's log.
func (c *Cluster) registerPodLog(ctx context.Context, t LogTarget, current, previous string) error {
	c.logsMu.Lock()
	defer c.logsMu.Unlock()
	pod := t.Namespace + "/" + t.Pod
	if slices.Contains(c.podLogs[pod], t.Container) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(current), 0o755); err != nil {
		return err
	}
	for _, f := range []string{current, previous} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			return err
		}
	}
	if c.podLogs == nil {
		c.podLogs = map[string][]string{}
	}
	containers := append(slices.Clone(c.podLogs[pod]), t.Container)
	var logs []any
	for _, name := range containers {
		cur, prev := c.podLogFiles(LogTarget{Namespace: t.Namespace, Pod: t.Pod, Container: name})
		logs = append(logs, map[string]any{"containers": []any{name}, "logsFile": cur,
			"previousLogsFile": prev, "follow": true})
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Logs",
		"metadata": map[string]any{"name": t.Pod, "namespace": t.Namespace},
		"spec":     map[string]any{"logs": logs},
	}}
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	if err != nil {
		return err
	}
	if _, err := dyn.Resource(logsResource).Namespace(t.Namespace).Apply(ctx, t.Pod, obj,
		metav1.ApplyOptions{FieldManager: "testcluster", Force: true}); err != nil {
		return fmt.Errorf("apply Logs: %w", err)
	}
	c.podLogs[pod] = containers
	ctx, cancel := context.WithTimeout(ctx, logServeTimeout)
	defer cancel()
	// kwok sees the Logs object through a watch: wait until a read through the API server
	// finds the file.
	return c.waitFor(ctx, "the API server to serve the log of "+t.String(), func(ctx context.Context) (bool, error) {
		_, err := c.client.CoreV1().Pods(t.Namespace).GetLogs(t.Pod, &corev1.PodLogOptions{Container: t.Container}).DoRaw(ctx)
		return err == nil, err
	})
}

// waitLogsAPI waits until the API server serves kwok's Logs and ClusterLogs resources.
func (c *Cluster) waitLogsAPI(ctx context.Context) error {
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	if err != nil {
		return err
	}
	return c.waitFor(ctx, "kwok's Logs and ClusterLogs CRDs", func(ctx context.Context) (bool, error) {
		for _, r := range []string{"logs", "clusterlogs"} {
			gvr := logsResource
			gvr.Resource = r
			if _, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
				return false, err
			}
		}
		return true, nil
	})
}
