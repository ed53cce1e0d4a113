package render

import (
	"strconv"

	"github.com/gpuctl/gpuctl/internal/keys"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Multi-node training defaults.
const (
	// MasterPort is the rendezvous port of multi-node training (torchrun's default).
	MasterPort = 29500
	// startupFailures x startupPeriod is how long a service may take to start (loading a model).
	startupPeriod   = 10
	startupFailures = 180
)

// workloadInput is a validated workload with everything its builders need.
type workloadInput struct {
	*Workload
	doc       *Document
	namespace string
	source    string
	// writable are the host-path prefixes below which workdirs are mounted read-write.
	writable []string
	// queued puts the workload in its team's Kueue queue (queueing kueue, a team namespace).
	queued bool
	// jobset renders multi-node training as a JobSet (multiNode jobset).
	jobset bool
}

// Has reports whether the workload's file set a field.
func (w workloadInput) Has(field string) bool { return w.doc.Has(field) }

func (w workloadInput) priority() string {
	if w.Job.Priority == "" {
		return "medium"
	}
	return w.Job.Priority
}

func (w workloadInput) pool() string {
	if w.Resources.Pool == "" {
		return keys.DefaultPool
	}
	return w.Resources.Pool
}

// labels are set on the workload's objects and on its pod template.
func (w workloadInput) labels() map[string]string {
	return map[string]string{
		keys.JobType:   w.Kind,
		keys.Priority:  w.priority(),
		keys.Pool:      w.pool(),
		keys.App:       w.Job.Name,
		keys.ManagedBy: keys.ManagedByValue,
	}
}

// enqueue labels a queued workload's object and pod template for its LocalQueue and
// WorkloadPriorityClass (queueLabels).
func (w workloadInput) enqueue(meta *metav1.ObjectMeta, tmpl *corev1.PodTemplateSpec) {
	if !w.queued {
		return
	}
	for k, v := range queueLabels(w.priority()) {
		meta.Labels[k], tmpl.Labels[k] = v, v
	}
}

func (w workloadInput) meta(name string) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Name: name, Namespace: w.namespace, Labels: w.labels(),
		Annotations: map[string]string{keys.Source: w.source}}
	if w.Job.Description != "" {
		m.Annotations[keys.Description] = w.Job.Description
	}
	return m
}

func (w workloadInput) selector() *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{keys.App: w.Job.Name}}
}

// podTemplate builds the pod of any workload kind; extraEnv comes before the user's env,
// which wins on equal names.
func (w workloadInput) podTemplate(extraEnv []corev1.EnvVar) corev1.PodTemplateSpec {
	c := corev1.Container{
		Name:      w.Job.Name,
		Image:     w.Environment.Image,
		Command:   w.Environment.Command,
		Args:      w.Environment.Args,
		Env:       mergeEnv(extraEnv, w.Environment.Env),
		EnvFrom:   w.envFrom(),
		Resources: w.resourceRequirements(),
	}
	spec := corev1.PodSpec{
		Containers:        []corev1.Container{c},
		PriorityClassName: priorityClassName(w.priority()),
		NodeSelector:      w.nodeSelector(),
		Affinity:          w.affinity(),
	}
	if s := w.Environment.ImagePullSecret; s != "" {
		spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: s}}
	}
	if w.Resources.GPU > 0 {
		spec.Tolerations = []corev1.Toleration{{Key: keys.ResourceGPU, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	}
	w.addPort(&spec.Containers[0])
	w.addVolumes(&spec)
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: w.labels()}, Spec: spec}
}

func mergeEnv(defaults []corev1.EnvVar, user []EnvVar) []corev1.EnvVar {
	set := map[string]bool{}
	for _, e := range user {
		set[e.Name] = true
	}
	var out []corev1.EnvVar
	for _, e := range defaults {
		if !set[e.Name] {
			out = append(out, e)
		}
	}
	for _, e := range user {
		out = append(out, userEnv(e))
	}
	return out
}

// resourceRequirements sets requests equal to limits, the Guaranteed QoS class.
func (w workloadInput) resourceRequirements() corev1.ResourceRequirements {
	rl := corev1.ResourceList{}
	r := w.Resources
	if r.CPU.Sign() > 0 {
		rl[corev1.ResourceCPU] = r.CPU
	}
	if r.Memory.Sign() > 0 {
		rl[corev1.ResourceMemory] = r.Memory
	}
	switch {
	case r.GPU > 0:
		rl[keys.ResourceGPU] = *resource.NewQuantity(int64(r.GPU), resource.DecimalSI)
	case r.GPUShare.Sign() > 0:
		rl[keys.ResourceGPUMem] = *resource.NewQuantity(r.GPUShare.Value()>>30, resource.DecimalSI)
	}
	if len(rl) == 0 {
		return corev1.ResourceRequirements{}
	}
	return corev1.ResourceRequirements{Requests: rl, Limits: rl.DeepCopy()}
}

func (w workloadInput) nodeSelector() map[string]string {
	sel := map[string]string{}
	if p := w.pool(); p != keys.DefaultPool {
		sel[keys.Pool] = p
	}
	if t := w.Resources.GPUType; t != "" {
		sel[keys.GPUType] = NormalizeGPUType(t)
	}
	if len(sel) == 0 {
		return nil
	}
	return sel
}

// affinity keeps default-pool work off pool nodes, and spreads multi-node training one pod a node.
func (w workloadInput) affinity() *corev1.Affinity {
	var a corev1.Affinity
	if w.pool() == keys.DefaultPool {
		a.NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: keys.Pool, Operator: corev1.NodeSelectorOpDoesNotExist},
			}}},
		}}
	}
	if w.multiNode() {
		a.PodAntiAffinity = &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: w.selector(),
			TopologyKey:   corev1.LabelHostname,
		}}}
	}
	if a.NodeAffinity == nil && a.PodAntiAffinity == nil {
		return nil
	}
	return &a
}

func (w workloadInput) multiNode() bool { return w.Kind == KindTraining && w.Resources.NodeCount > 1 }

// servicePort is the port of inference, notebook and compute services (0: none).
func (w workloadInput) servicePort() int {
	if w.Service.Port == 0 && w.Kind == KindNotebook {
		return 8888
	}
	return w.Service.Port
}

func (w workloadInput) addPort(c *corev1.Container) {
	port := w.servicePort()
	if port == 0 || w.Kind == KindTraining {
		return
	}
	c.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: int32(port), Protocol: corev1.ProtocolTCP}}
	if w.Service.HealthCheck == "" {
		return
	}
	probe := func(period, failures int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: w.Service.HealthCheck, Port: intstr.FromString("http")}},
			PeriodSeconds:    period,
			FailureThreshold: failures,
		}
	}
	c.StartupProbe = probe(startupPeriod, startupFailures)
	c.ReadinessProbe = probe(10, 3)
	c.LivenessProbe = probe(20, 3)
}

// addVolumes mounts the workdirs, the Secrets (addSecretVolumes), and a memory-backed
// /dev/shm for GPU work (NCCL and PyTorch data loaders outgrow the container runtime's 64 MiB
// default).
func (w workloadInput) addVolumes(spec *corev1.PodSpec) {
	c := &spec.Containers[0]
	for i, wd := range w.Storage.Workdirs {
		name := "workdir-" + strconv.Itoa(i)
		p := wd.Path
		if len(p) > 1 {
			p = trimSlash(p)
		}
		// Read-only unless below a writable prefix: a job that can write a directory can plant
		// a symlink there that a later hostPath mount follows on the node. A read-only
		// directory must exist; only a writable one may be created by the kubelet.
		writable := underAny(p, w.writable)
		t := corev1.HostPathDirectory
		switch {
		case isFilePath(wd):
			t = corev1.HostPathFile
		case writable:
			t = corev1.HostPathDirectoryOrCreate
		}
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: name,
			VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: p, Type: &t}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: name, MountPath: p, ReadOnly: !writable})
	}
	w.addSecretVolumes(spec)
	if w.Resources.GPU > 0 && (w.Kind == KindTraining || w.Kind == KindInference) {
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "dshm",
			VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "dshm", MountPath: "/dev/shm"})
	}
}

func trimSlash(p string) string {
	for len(p) > 1 && p[len(p)-1] == '/' {
		p = p[:len(p)-1]
	}
	return p
}

func priorityClassName(priority string) string {
	switch priority {
	case "high":
		return keys.PriorityClassHigh
	case "low":
		return keys.PriorityClassLow
	}
	return keys.PriorityClassMedium
}

// serviceName is the Service of a workload: svc-{name}.
func serviceName(job string) string { return keys.ServicePrefix + job }

func nodePortService(w workloadInput) *corev1.Service {
	port := int32(w.servicePort())
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: w.meta(serviceName(w.Job.Name)),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeNodePort,
			Selector: map[string]string{keys.App: w.Job.Name},
			Ports: []corev1.ServicePort{{Name: "http", Port: port, TargetPort: intstr.FromString("http"),
				Protocol: corev1.ProtocolTCP}},
		},
	}
}

func ptr[T any](v T) *T { return &v }

func int32Ptr(i int) *int32 { return ptr(int32(i)) }
