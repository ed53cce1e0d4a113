package render

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"

	"github.com/gpuctl/gpuctl/internal/keys"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// buildWorkload renders one workload into its Kubernetes objects, its Secret references
// recorded on those that run its pods (recordSecretRefs).
func buildWorkload(w workloadInput) []runtime.Object {
	objs := buildKind(w)
	w.recordSecretRefs(objs)
	return objs
}

// buildKind renders one workload into the objects of its kind.
func buildKind(w workloadInput) []runtime.Object {
	switch w.Kind {
	case KindTraining:
		return buildTraining(w)
	case KindInference:
		return []runtime.Object{deployment(w), nodePortService(w)}
	case KindNotebook:
		return []runtime.Object{statefulSet(w), nodePortService(w)}
	default: // compute
		if w.servicePort() == 0 {
			return []runtime.Object{deployment(w)}
		}
		return []runtime.Object{deployment(w), nodePortService(w)}
	}
}

// buildTraining renders a Job; node_count > 1 makes an Indexed Job with a headless Service
// for rendezvous and the environment that torchrun and DeepSpeed read.
func buildTraining(w workloadInput) []runtime.Object {
	job := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: w.meta(w.Job.Name),
		Spec: batchv1.JobSpec{
			// A failed training run is not retried on its own: GPUs are too dear to burn on a
			// crash loop. Change the file (or re-sync) to run it again.
			BackoffLimit: int32Ptr(0),
		},
	}
	if w.Job.Suspend {
		job.Spec.Suspend = ptr(true)
		job.Annotations[keys.Paused] = keys.PausedValue
	}
	job.Annotations[keys.SpecDigest] = w.specDigest()
	if !w.multiNode() {
		// An Indexed Job of one index: Kubernetes counts an index's attempts on its pods
		// (attemptEnv) only with backoffLimitPerIndex, which needs indexes.
		job.Spec.CompletionMode = ptr(batchv1.IndexedCompletion)
		job.Spec.Completions, job.Spec.Parallelism = int32Ptr(1), int32Ptr(1)
		w.retryJob(&job.Spec)
		job.Spec.Template = w.podTemplate(attemptEnv())
		job.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
		w.enqueue(&job.ObjectMeta, &job.Spec.Template)
		return []runtime.Object{job}
	}
	if w.jobset {
		return buildJobSet(w, job)
	}
	// An Indexed Job: a lost rank fails it at once (backoffLimit 0), since the Job API cannot
	// restart the other ranks with it (multinode.go).
	n := w.Resources.NodeCount
	svc := serviceName(w.Job.Name)
	job.Spec.CompletionMode = ptr(batchv1.IndexedCompletion)
	job.Spec.Completions = int32Ptr(n)
	job.Spec.Parallelism = int32Ptr(n)
	job.Spec.Template = w.podTemplate(distributedEnv(w, w.Job.Name+"-0."+svc))
	job.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	job.Spec.Template.Spec.Subdomain = svc
	w.enqueue(&job.ObjectMeta, &job.Spec.Template)
	headless := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: w.meta(svc),
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			Selector:                 map[string]string{keys.App: w.Job.Name},
			PublishNotReadyAddresses: true,
			Ports: []corev1.ServicePort{{Name: "rendezvous", Port: MasterPort, TargetPort: intstr.FromInt32(MasterPort),
				Protocol: corev1.ProtocolTCP}},
		},
	}
	return []runtime.Object{job, headless}
}

// specDigest is the digest of what the file declares of the job (its parsed fields, so a
// comment or a reordering does not change it) and where it lands. The reconciler keeps a live
// Job with the same digest as it is where a newer gpuctl, or an admin's setting, would change
// an immutable field of it: a finished run is not run again, a running one not restarted.
func (w workloadInput) specDigest() string {
	b, err := json.Marshal(struct {
		Namespace string
		Workload  *Workload
	}{w.namespace, w.Workload})
	if err != nil {
		panic("render: a workload has no JSON form: " + err.Error()) // plain data: never
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}

// distributedEnv is the environment of multi-node training, whose rank 0 answers at the host
// name master. WORLD_SIZE is the number of nodes (one pod a node, as Kubeflow's PyTorchJob sets
// it); the PET_* variables are read by torchrun as its --nnodes, --node_rank, --nproc_per_node
// and --master_* flags.
func distributedEnv(w workloadInput, master string) []corev1.EnvVar {
	nodes := strconv.Itoa(w.Resources.NodeCount)
	port := strconv.Itoa(MasterPort)
	rank := corev1.EnvVar{ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
		FieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}}
	withName := func(e corev1.EnvVar, name string) corev1.EnvVar { e.Name = name; return e }
	env := []corev1.EnvVar{
		{Name: "MASTER_ADDR", Value: master},
		{Name: "MASTER_PORT", Value: port},
		{Name: "WORLD_SIZE", Value: nodes},
		{Name: "NNODES", Value: nodes},
		withName(rank, "NODE_RANK"),
		{Name: "PET_MASTER_ADDR", Value: master},
		{Name: "PET_MASTER_PORT", Value: port},
		{Name: "PET_NNODES", Value: nodes},
		withName(rank, "PET_NODE_RANK"),
	}
	if g := w.Resources.GPU; g > 0 {
		env = append(env,
			corev1.EnvVar{Name: "NPROC_PER_NODE", Value: strconv.Itoa(g)},
			corev1.EnvVar{Name: "PET_NPROC_PER_NODE", Value: strconv.Itoa(g)})
	}
	return append(env,
		corev1.EnvVar{Name: "NCCL_SOCKET_IFNAME", Value: "eth0"},
		corev1.EnvVar{Name: "NCCL_DEBUG", Value: "WARN"})
}

func deployment(w workloadInput) *appsv1.Deployment {
	replicas := 1
	if w.Has("service.replicas") {
		replicas = w.Service.Replicas
	}
	d := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: w.meta(w.Job.Name),
		Spec: appsv1.DeploymentSpec{
			Replicas: int32Ptr(replicas),
			Selector: w.selector(),
			Template: w.podTemplate(nil),
		},
	}
	w.enqueue(&d.ObjectMeta, &d.Spec.Template)
	return d
}

func statefulSet(w workloadInput) *appsv1.StatefulSet {
	replicas := 1
	if w.Has("service.replicas") {
		replicas = w.Service.Replicas // 1, or 0 while paused
	}
	ss := &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: w.meta(w.Job.Name),
		Spec: appsv1.StatefulSetSpec{
			Replicas:    int32Ptr(replicas),
			ServiceName: serviceName(w.Job.Name),
			Selector:    w.selector(),
			Template:    w.podTemplate(nil),
		},
	}
	w.enqueue(&ss.ObjectMeta, &ss.Spec.Template)
	return ss
}
