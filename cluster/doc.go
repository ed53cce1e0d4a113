// Package cluster is the read model of what runs in a cluster: gpuctl's jobs (the Jobs,
// Deployments and StatefulSets that render made from workload files) with their status
// rules, the pools, the nodes and the quotas, read with a kubernetes.Interface. It is the one
// reader of the pool registry, the ConfigMaps that render writes for pool files
// (render.PoolRecord). The daemon's API and web page serve it; it knows nothing of HTTP, so a
// command-line client can read the same model.
//
//	r := &cluster.Reader{Client: clientset}
//	jobs, err := r.Jobs(ctx, cluster.JobFilter{Pool: "training-pool", Status: "running"})
//	if err != nil {
//		return err // a *FilterError names the filter it refuses
//	}
//	job, err := r.Job(ctx, "alice.sft") // or "sft" when one namespace has it
//
// The types are the JSON documents of the daemon's API (docs/daemon.md): their field names
// and order are a contract.
//
// # Jobs
//
// A job is a gpuctl workload: a Job, Deployment or StatefulSet labelled
// g8s.host/managed-by=gpuctl with a g8s.host/job-type. Its id is "<namespace>.<name>", which
// is unambiguous because namespaces hold no dots; Reader.Job also accepts a bare name when
// exactly one namespace has a job of that name (else an *AmbiguousError). A detail's
// yamlContent is empty (the file lives in Git); its source is the file's path there
// (annotation g8s.host/source), and its metrics are zeros until metrics are collected.
//
// A job's status is Pending, Running, Partially Running, Succeeded or Failed: JobStatus for a
// training Job, DeploymentStatus and StatefulSetStatus for the others. A status filter
// accepts these in any case, with or without a space, dash or underscore.
//
// # Pools and nodes
//
// The pools are the registry's together with the values of the g8s.host/pool node label;
// nodes without the label form the "default" pool. A pool's GPUs are the nodes' allocatable
// nvidia.com/gpu; the used GPUs are the nvidia.com/gpu requests of the pods on those nodes
// that have not terminated, whoever runs them, counted as the scheduler counts a pod.
//
// # Quotas
//
// A quota is a ResourceQuota labelled g8s.host/quota; its user is its namespace. Used is what
// the API server's quota controller counts, for the resources that the quota limits. With
// queueing kueue a team's quota is its ClusterQueue (labelled g8s.host/quota and
// g8s.host/managed-by=gpuctl, named as the namespace): Quota.Queue has its quota by pool
// (flavor), what its workloads reserve and borrow there, its limits, and its pending and
// admitted workloads; Hard and Used are the sums over its pools. A cluster without Kueue's
// API, or credentials that may not list ClusterQueues, have the ResourceQuotas only.
//
// # Logs and events
//
// Reader.Logs streams the log lines of a job's pods through the API server (pods/log), each
// with a prefix that names its source: "rank-<i>" for a pod of an indexed Job (one per node of
// a multi-node training), else the pod name. It keeps to the current pods (a retried pod's
// failed predecessor only with AllPods), takes the last Tail lines, those of the last Since,
// those that contain Grep; with Follow it streams until the context ends and picks up the
// containers that start or restart meanwhile, as stern does. It calls back with each line, so
// the CLI can colour the prefix and the API stream plain text:
//
//	opts := cluster.DefaultLogOptions()
//	opts.Follow, opts.Tail = true, 10
//	err := r.Logs(ctx, "alice.sft", opts, func(l cluster.LogLine) error {
//		_, err := fmt.Fprintln(w, l.Format(nil)) // "[rank-0] epoch 3 loss 0.5"
//		return err
//	})
//
// A job none of whose containers has started has no log yet: a *NoLogsError. Reader.JobEvents
// and Reader.Events return the Kubernetes events of a job's objects (its Job, Deployment or
// StatefulSet, a Deployment's ReplicaSets, its pods) and of every job, oldest first.
//
// # Rows and descriptions
//
// Reader.JobPods answers `gpuctl get jobs`: one JobPod per pod of each job, and one for a job
// with no pod, filtered by namespace, kind, pool, label selector and status word. A pod's
// status is in kubectl's words (PodStatus: CrashLoopBackOff, ImagePullBackOff, OOMKilled,
// Completed, ...), explained by PodReason: a hint for the reasons a person meets most, the exit
// code, and for a pod no node can take the scheduler's message shortened by SchedulingMessage
// ("0/5 nodes: insufficient nvidia.com/gpu"). Reader.WatchJobPods calls back with the rows
// each time they change, from informers on the jobs and their pods. Reader.JobDescription
// answers `gpuctl describe job`: the detail, the rows, the last events, the revision that the
// daemon last applied (its status ConfigMap) and the drift report's items about the job (the
// drift ConfigMap), the last two when the credentials may read them. Node lists the pods that
// use a node's GPUs; Quota the use of a user's quota by job.
//
// Unknown jobs, pools, nodes and users are *NotFoundError.
//
// # Queue state (Kueue)
//
// When the cluster serves Kueue's API (kueue.x-k8s.io/v1beta2, read as unstructured objects
// through Reader.Dynamic or the informers), a job that Kueue queues carries a QueueState (its
// Workload's conditions, its position among the waiting Workloads of its team's ClusterQueue
// in Kueue's BestEffortFIFO order, what it waits for against the ClusterQueue's quota and the
// cohort's lending, its preemptor), and a pending job it holds back is Queued or Preempted.
// Without the API there is none, and a Reader asks again only after 5 minutes.
//
// # Where the objects come from
//
// The reader lists and gets objects through Objects, a small interface of the calls it makes.
// By default (APIObjects, what the CLI uses) that is plain List and Get calls on every call,
// and the reader keeps nothing. A long-running server gives InformerObjects instead: shared
// informers, started once, that cache gpuctl's workloads, the pods, ReplicaSets, nodes,
// quotas, events and the pool registry (without their managedFields, and the workloads' pod
// templates reduced to the containers' resources and the node selector, all the reader reads
// of them), so that a read sends no request once their first lists are done. Both answer the
// same. Logs are always read through
// the API server (pods/log; a followed log watches the job's pods while it runs).
//
//	objects := cluster.StartInformers(ctx, clientset, dyn, "") // lists in the background
//	r := &cluster.Reader{Client: clientset, Objects: objects}
//	jobs, err := r.Jobs(ctx, cluster.JobFilter{}) // waits for the first lists once
//
// # Models and scopes
//
// Model is the read verbs' interface: Reader implements it from the cluster, gpuctl --server
// over the daemon's API. Scope(m, namespaces) is the Model of a team: jobs, their events and
// logs, and quotas of its namespaces only (a job of another namespace is unknown, a bare name
// resolves among its namespaces only), pools and nodes whole (they are shared), a pool's jobs
// of its namespaces. The daemon's API answers a token that grants some namespaces with it.
// The error types carry JSON tags: the API sends them as an ErrorDetail (DetailOf), and its
// client gives them back to its callers (ErrorDetail.Err).
package cluster
