package keys

// Prefix starts every label and annotation key that gpuctl writes.
const Prefix = "g8s.host/"

// Labels set on every rendered object and pod template.
const (
	// JobType is the gpuctl kind of a workload: training, inference, notebook or compute.
	JobType = Prefix + "job-type"
	// Priority is the workload's priority: high, medium or low.
	Priority = Prefix + "priority"
	// Pool is the resource pool of a workload, and the pool of a Node.
	Pool = Prefix + "pool"
	// ManagedBy marks objects that gpuctl owns; only objects carrying it are ever pruned.
	ManagedBy = Prefix + "managed-by"
	// App is the selector label of Deployments, StatefulSets and Services.
	App = "app"
	// Quota names the quota document that created a Namespace or ResourceQuota.
	Quota = Prefix + "quota"
	// PoolRegistry marks the ConfigMaps that record pool definitions.
	PoolRegistry = Prefix + "pool-registry"
)

// ManagedByValue is the value of the ManagedBy label.
const ManagedByValue = "gpuctl"

// Node labels (published by gpuctl-node-labeler, or set from pool files).
const (
	// GPUType is the normalized GPU model and memory, e.g. a100-80g.
	GPUType = Prefix + "gpu-type"
	// GPUProduct is the sanitized NVML product name.
	GPUProduct = Prefix + "gpu-product"
	// GPUCount is the number of GPUs on the node.
	GPUCount = Prefix + "gpu-count"
	// GPUMemory is the memory of one GPU in MiB.
	GPUMemory = Prefix + "gpu-memory"
	// GPUFamily is the architecture family derived from the compute capability.
	GPUFamily = Prefix + "gpu-family"
	// DriverVersion is the NVIDIA driver version.
	DriverVersion = Prefix + "driver-version"
	// CUDAVersion is the CUDA driver API version.
	CUDAVersion = Prefix + "cuda-version"
	// GPUTypesMixed is "true" on nodes with more than one GPU model.
	GPUTypesMixed = Prefix + "gpu-types-mixed"
	// MIGEnabled is "true" on nodes where at least one GPU is in MIG mode.
	MIGEnabled = Prefix + "mig-enabled"
)

// Annotations.
const (
	// Description carries job.description.
	Description = Prefix + "description"
	// Source is the repository-relative file a rendered object came from.
	Source = Prefix + "source"
	// Prune set to PruneDisabled keeps an object out of pruning.
	Prune = Prefix + "prune"
	// PruneDisabled is the value of Prune that opts an object out.
	PruneDisabled = "disabled"
	// Drift set to DriftIgnore keeps an object out of drift detection and correction.
	Drift = Prefix + "drift"
	// DriftIgnore is the value of Drift that opts an object out.
	DriftIgnore = "ignore"
	// Tenant is set by the renderer on every object rendered from a directory mapped to a
	// namespace (a tenant directory); its value is that namespace. The engine applies and
	// prunes such objects as the tenant's ServiceAccount, and only in that namespace.
	Tenant = Prefix + "tenant"
	// Adopt set to AdoptAllowed on a live object that gpuctl did not create lets gpuctl take
	// it over when a file declares it; an admin sets it, never a file.
	Adopt = Prefix + "adopt"
	// AdoptAllowed is the value of Adopt that allows adoption.
	AdoptAllowed = "true"
	// Paused is set to PausedValue on the Job of a training document with job.suspend: true
	// (gpuctl pause): the Job is suspended by its owner, not waiting for Kueue's admission.
	Paused = Prefix + "paused"
	// PausedValue is the value of Paused.
	PausedValue = "true"
)

// Tenancy: the identity the reconciler impersonates in a tenant namespace, and the policy
// objects it renders.
const (
	// TenantServiceAccount is the ServiceAccount (and RoleBinding) of each tenant namespace
	// that applies and prunes that namespace's objects; it is bound to the ClusterRole
	// TenantClusterRole that deploy/ installs.
	TenantServiceAccount = "gpuctl-tenant"
	// TenantClusterRole is the ClusterRole of the kinds a tenant directory may hold.
	TenantClusterRole = "gpuctl-tenant"
	// PodPolicyName names the ValidatingAdmissionPolicy (and its binding) that holds pods in
	// tenant namespaces to the pod policy.
	PodPolicyName = "gpuctl-tenant-pod-policy"
	// PriorityClassPrefix starts the names of the PriorityClasses gpuctl manages.
	PriorityClassPrefix = "gpuctl-"
)

// Kubernetes resource names that gpuctl requests.
const (
	// ResourceGPU is the whole-GPU extended resource of the NVIDIA device plugin.
	ResourceGPU = "nvidia.com/gpu"
	// ResourceGPUMem is the GPU memory slice (GiB) of the GPU-share device plugin.
	ResourceGPUMem = "aliyun.com/gpu-mem"
	// QuotaRequestsGPU is the ResourceQuota key that counts requested GPUs.
	QuotaRequestsGPU = "requests.nvidia.com/gpu"
)

// Names of objects that gpuctl creates.
const (
	// SystemNamespace is the default namespace of the reconciler, its status and the pool registry.
	SystemNamespace = "gpuctl-system"
	// ServicePrefix prefixes the Service of a workload: svc-{name}.
	ServicePrefix = "svc-"
	// PoolRegistryPrefix prefixes the registry ConfigMap of a pool: gpuctl-pool-{name}.
	PoolRegistryPrefix = "gpuctl-pool-"
	// FieldManager is the server-side apply field manager of the reconciler and the CLI.
	FieldManager = "gpuctl"
	// DefaultPool is the pool of workloads that name none.
	DefaultPool = "default"
	// DefaultNamespace is the namespace of workloads that name none and are not mapped.
	DefaultNamespace = "default"
	// ConfigFile is the reconciler configuration file looked up at the root of a rendered tree.
	ConfigFile = ".gpuctl.yaml"
)

// PriorityClass names and values for job.priority.
const (
	PriorityClassHigh   = "gpuctl-high"
	PriorityClassMedium = "gpuctl-medium"
	PriorityClassLow    = "gpuctl-low"

	PriorityValueHigh   = 1000000
	PriorityValueMedium = 500000
	PriorityValueLow    = 100
)

// Annotations and labels of the reconciler's bookkeeping.
const (
	// AppliedHash is the hash of the configuration gpuctl last applied to an object; it lets a
	// sync decide "unchanged" without asking the API server.
	AppliedHash = Prefix + "applied-hash"
	// SpecDigest is the digest of what a training job's file declares (render), on its Job or
	// JobSet: a Job whose file did not change keeps the spec it was created with (reconciler).
	SpecDigest = Prefix + "spec-digest"
	// SecretRefs is render's record, on a workload's Job, JobSet, Deployment or StatefulSet,
	// of the Secrets its pods reference and the lines of its file that name them (JSON, see
	// render.SecretRef); the engine takes it off, checks them and never applies it.
	SecretRefs = Prefix + "secret-refs"
	// Encrypted marks an object rendered from a SOPS-encrypted file that was not decrypted
	// (EncryptedSealed: no key at hand, as on a laptop): the engine leaves it as it is.
	Encrypted = Prefix + "encrypted"
	// EncryptedSealed is Encrypted's value.
	EncryptedSealed = "sealed"
	// KeptHash is the applied-hash of the configuration that a sync found would change an
	// immutable field of a Job whose file did not change, and kept the Job as it is instead.
	KeptHash = Prefix + "kept-hash"
	// ApplySetPrefix starts every label and annotation key of kubectl ApplySets (KEP-3659);
	// gpuctl writes them itself, and a file may not.
	ApplySetPrefix = "applyset.kubernetes.io/"
	// ApplySetPartOf labels every member of gpuctl's inventory (kubectl ApplySet).
	ApplySetPartOf = "applyset.kubernetes.io/part-of"
	// ApplySetID labels the inventory's parent object.
	ApplySetID = "applyset.kubernetes.io/id"
	// ApplySetTooling names the tool that manages an ApplySet.
	ApplySetTooling = "applyset.kubernetes.io/tooling"
	// ApplySetGroupKinds lists the group-kinds of an ApplySet's members.
	ApplySetGroupKinds = "applyset.kubernetes.io/contains-group-kinds"
	// ApplySetNamespaces lists the namespaces of an ApplySet's members other than the parent's.
	ApplySetNamespaces = "applyset.kubernetes.io/additional-namespaces"
	// InventoryName is the name of the inventory's parent ConfigMap.
	InventoryName = "gpuctl-inventory"
	// NodeLabelerFieldManager is the field manager of gpuctl-node-labeler.
	NodeLabelerFieldManager = "gpuctl-node-labeler"
)

// The reconciler daemon's objects and annotations.
const (
	// StatusName is the ConfigMap that holds the daemon's status (key StatusKey).
	StatusName = "gpuctl-status"
	// StatusKey is the data key of the status JSON.
	StatusKey = "status"
	// DriftName is the ConfigMap that holds the drift report (key DriftReportKey) and its
	// history (key DriftHistoryKey).
	DriftName = "gpuctl-drift"
	// DriftReportKey is the data key of the current drift report (JSON).
	DriftReportKey = "report"
	// DriftHistoryKey is the data key of the drift history (JSON list, oldest first).
	DriftHistoryKey = "history"
	// SyncRequestedAt is set on the status ConfigMap by `gpuctl sync` to ask for a sync now;
	// its value is a new request id (a timestamp and a random suffix), and the
	// resourceVersion that the write makes is the request's place in line: any sync that
	// starts after the daemon has seen it answers it (daemon.Request).
	SyncRequestedAt = Prefix + "sync-requested-at"
	// LeaseName is the Lease of the daemon's leader election.
	LeaseName = "gpuctl-reconciler"
	// ReconcilerFieldManager is the field manager of the daemon's own bookkeeping objects.
	ReconcilerFieldManager = "gpuctl-reconciler"
)

// Kueue (queueing: kueue). gpuctl renders these labels and objects; Kueue reads them, and
// writes the Workloads that the read model shows as queue state.
const (
	// KueuePrefix starts every label and annotation key that Kueue reads or writes.
	KueuePrefix = "kueue.x-k8s.io/"
	// KueueQueueName is the label that names the LocalQueue (in the object's namespace) a
	// workload waits in.
	KueueQueueName = KueuePrefix + "queue-name"
	// KueuePriorityClass is the label that names a workload's WorkloadPriorityClass.
	KueuePriorityClass = KueuePrefix + "priority-class"
	// KueuePrebuiltWorkload names the Workload that such a copy runs under, which the manager's
	// Kueue made; Kueue runs a Job with this label only under that Workload.
	KueuePrebuiltWorkload = KueuePrefix + "prebuilt-workload-name"
	// KueueLocalQueue is the name of the LocalQueue gpuctl renders in each team namespace:
	// Kueue also puts workloads without a queue-name label in the LocalQueue of this name.
	KueueLocalQueue = "default"
	// KueueCohort is the cohort of every team's ClusterQueue, so idle quota can be borrowed.
	KueueCohort = "gpuctl"
	// KueueGroup is the API group of Kueue's objects.
	KueueGroup = "kueue.x-k8s.io"
	// KueueVersion is the version of Kueue's API that gpuctl renders and reads.
	KueueVersion = "v1beta2"
	// MultiKueueManager is the spec.managedBy of a Job (or JobSet) that Kueue's MultiKueue
	// dispatches from a manager cluster to a worker cluster: no pod of it runs in the manager,
	// and MultiKueue copies the worker's copy's status onto it.
	MultiKueueManager = KueuePrefix + "multikueue"
	// MultiKueueOrigin is the label of MultiKueue's copy of a job (and of its Workload) in a
	// worker cluster; its value names the manager's Kueue (its multiKueue.origin).
	MultiKueueOrigin = KueuePrefix + "multikueue-origin"
)

// MultiKueueCopy reports whether an object of group and kind, with these labels, is a
// MultiKueue copy in a worker cluster: a Job (batch) or a JobSet (jobset.x-k8s.io), the kinds
// gpuctl's manager dispatches, with MultiKueueOrigin, and KueuePrebuiltWorkload, without which
// Kueue would queue it as any job of the namespace. A worker's reconciler neither prunes such
// a copy (it carries the manager's gpuctl labels) nor calls it a shadow workload: it is the
// manager's, in Git there. Labels alone are only a claim, and this one is safe to believe of
// these kinds only: a Job or JobSet that forges both never runs, unless a Workload of that name
// exists, which only the manager's Kueue makes. Any other kind with the labels (a Deployment, a
// Pod, a Service that a tenant labelled) is judged as if it had none: the labels do not reach
// a Deployment's pods, which run. Callers believe it only in a cluster that the configuration
// lists as a MultiKueue worker (render.Result.MultiKueueWorker), the only place a copy can be.
func MultiKueueCopy(group, kind string, labels map[string]string) bool {
	switch {
	case group == "batch" && kind == "Job", group == jobSetGroup && kind == "JobSet":
		return labels[MultiKueueOrigin] != "" && labels[KueuePrebuiltWorkload] != ""
	}
	return false
}

// jobSetGroup is the API group of JobSet (kubernetes-sigs/jobset).
const jobSetGroup = "jobset.x-k8s.io"
