package cluster

import "context"

// Model is the read model as the read verbs use it: Reader answers it from the cluster with
// the user's credentials, and a client of the daemon's API (gpuctl --server) answers it over
// HTTP with a gpuctl token. The two give the same answers for the same cluster.
type Model interface {
	// Jobs lists the jobs that pass the filter.
	Jobs(ctx context.Context, f JobFilter) (JobList, error)
	// Job returns one job by id ("<namespace>.<name>", or a bare name unique across namespaces).
	Job(ctx context.Context, id string) (JobDetail, error)
	// JobPods lists the rows of gpuctl get jobs: one per pod of each job that passes the
	// filter, one for a job with no pod.
	JobPods(ctx context.Context, f JobPodFilter) (JobPodList, error)
	// WatchJobPods calls emit with the rows of JobPods, first at once, then each time they
	// change, until ctx ends (then it returns nil) or emit fails.
	WatchJobPods(ctx context.Context, f JobPodFilter, emit func(JobPodList) error) error
	// JobDescription describes one job (id as Job takes it): the job, its pods, its last
	// events, the applied revision and its drift.
	JobDescription(ctx context.Context, id string) (JobDescription, error)
	// Pools lists the pools.
	Pools(ctx context.Context) (PoolList, error)
	// Pool returns one pool by name.
	Pool(ctx context.Context, name string) (PoolDetail, error)
	// Nodes lists the nodes that pass the filter.
	Nodes(ctx context.Context, f NodeFilter) (NodeList, error)
	// Node returns one node by name, with the pods that use its GPUs.
	Node(ctx context.Context, name string) (NodeDetail, error)
	// Quotas lists the teams' quotas.
	Quotas(ctx context.Context) (QuotaList, error)
	// Quota returns the quota of one team (its namespace), with its use by job.
	Quota(ctx context.Context, user string) (Quota, error)
	// JobEvents returns the events of one job's objects and pods, oldest first.
	JobEvents(ctx context.Context, id string) (EventList, error)
	// Events returns the events of every job in namespace ("" for all), oldest first.
	Events(ctx context.Context, namespace string) (EventList, error)
	// Logs calls emit with each log line of a job's pods until they end (or, when following,
	// until ctx ends).
	Logs(ctx context.Context, id string, opts LogOptions, emit func(LogLine) error) error
}

var _ Model = (*Reader)(nil)
