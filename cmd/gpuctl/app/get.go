package app

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuctl/gpuctl/cluster"
)

func newGetCommand(s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "get jobs|pools|nodes|quotas",
		Short: "List jobs (one row per pod), pools, nodes or quotas, as kubectl get does",
		Long: `List what runs and what it runs on, read with your kubeconfig:

  gpuctl get jobs      one row per pod of each job (a job with no pod yet has a row too)
  gpuctl get pools     each pool's nodes and GPUs: total, used, free
  gpuctl get nodes     each node's pool, GPU type and GPUs
  gpuctl get quotas    each team's quota: GPUs, CPU and memory used of the limit

-o wide adds columns, -o json|yaml prints the read model's data (the documents of the
daemon's API), -o name the names only.

--clusters a,b or --all-clusters read the clusters of the config file's clusters: list at
once and add a CLUSTER column first (a "cluster" field in -o json|yaml); a cluster that cannot
be read is a line on standard error, the others still print, and the exit code is 1. A job that
MultiKueue dispatched from one cluster read to another is one row, CLUSTER "hub→gpu-b".`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newGetJobsCommand(s), newGetPoolsCommand(s), newGetNodesCommand(s), newGetQuotasCommand(s))
	return cmd
}

// getJobsOptions are the flags of gpuctl get jobs.
type getJobsOptions struct {
	read   readOptions
	scope  scopeOptions
	filter cluster.JobPodFilter
	output string
	watch  bool
	fleet  fleetOptions
}

func newGetJobsCommand(s Streams) *cobra.Command {
	var o getJobsOptions
	cmd := &cobra.Command{
		Use:     "jobs",
		Aliases: []string{"job"},
		Short:   "List the pods of jobs, one row each, with their status in words",
		Long: `List one row per pod of each job: JOB ID is the pod's name, NAME the job's. STATUS says what
a person needs: Running, Completed, CrashLoopBackOff, ImagePullBackOff, ErrImagePull,
OOMKilled, Error, ... and for a pod that no node can take, why, from the scheduler:
"Pending (0/5 nodes: insufficient nvidia.com/gpu)". A job with no pod (not started yet,
suspended, or its pods gone) has one row with <none> as JOB ID and the job's status.
With Kueue (queueing: kueue), a job that waits in its team's queue is Queued (or Preempted);
-o wide adds QUEUE (its team's ClusterQueue and its place there: "alice #3") and REASON ("#3
in alice: waits for 4 × a100-80g in training-pool, team alice at 8/8, cohort lending 0").
REASON says why a job stands where it does, in words: "Error: exit code 1", "OOMKilled (64Gi
limit)", "Preempted by default/sft (gpuctl-high), retried (attempt 2 of 4)", "Evicted: node
gpu-a100-0 unreachable", "BackoffLimitExceeded after 3 attempts", "Preempted by bob.big
(reclamation within the cohort), requeued at #2"; then the pod's own reason.

A job that Kueue's MultiKueue runs in a worker cluster has no pod here: when one is listed, a
CLUSTER column comes first, with the worker ("-" for a job that runs here).

Jobs are those of the namespace -n, of every namespace with -A, else of the namespace of the
kubeconfig's context, as kubectl has it. --status keeps the rows whose status or pod phase is
the word given (pending, running, crashloopbackoff, failed, ...). -w prints the rows again
each time they change, until Ctrl-C.`,
		Example: `  gpuctl get jobs
  gpuctl get jobs -A --kind training --status pending
  gpuctl get jobs -n alice -o wide
  gpuctl get jobs -l g8s.host/priority=high -w`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := outputFlag(o.output, "", outputWide, outputJSON, outputYAML, outputName); err != nil {
				return err
			}
			if o.watch && o.output != "" && o.output != outputWide {
				return &ExitError{Code: ExitTrouble, Err: fmt.Errorf("--watch prints a table: use it without -o, or with -o wide")}
			}
			if o.fleet.on() {
				return o.runFleet(cmd, s)
			}
			m, err := o.read.Model(s.Err)
			if err != nil {
				return err
			}
			ns, err := o.scope.resolve(&o.read.kube, m)
			if err != nil {
				return err
			}
			o.filter.Namespace = ns
			if o.watch {
				return readError(watchJobs(cmd, s.Out, m, o.filter, o.output == outputWide))
			}
			list, err := m.JobPods(cmd.Context(), o.filter)
			if err != nil {
				return readError(err)
			}
			if len(list.Items) == 0 && o.output != outputJSON && o.output != outputYAML {
				fmt.Fprintln(s.Err, noneFound("jobs", ns))
				return nil
			}
			return printJobPods(s.Out, list, o.output, time.Now())
		},
	}
	f := cmd.Flags()
	o.read.BindFlags(f)
	o.scope.bindFlags(cmd, "the jobs of this namespace")
	f.StringVar(&o.filter.Kind, "kind", "", "only jobs of this kind: training, inference, notebook or compute")
	f.StringVar(&o.filter.Pool, "pool", "", "only jobs of this pool")
	f.StringVar(&o.filter.Status, "status", "", "only rows of this status or pod phase (pending, running, failed, crashloopbackoff, ...)")
	f.StringVarP(&o.filter.Selector, "selector", "l", "", "only jobs whose labels match this selector, e.g. g8s.host/priority=high")
	f.StringVarP(&o.output, "output", "o", "", "output format: wide, json, yaml or name (default: a table)")
	f.BoolVarP(&o.watch, "watch", "w", false, "after the list, print the rows that change, until interrupted")
	o.fleet.BindFlags(f)
	return cmd
}

// noneFound is kubectl's note for an empty list, on standard error.
func noneFound(what, namespace string) string {
	if namespace == "" {
		return "No " + what + " found."
	}
	return "No " + what + " found in namespace " + namespace + "."
}

// jobPodHeader is the header of get jobs, and of the pods of describe job.
func jobPodHeader(wide bool) []string {
	h := []string{"JOB ID", "NAME", "NAMESPACE", "KIND", "STATUS", "READY", "NODE", "IP", "AGE"}
	if wide {
		h = append(h, "GPUS", "POOL", "GPU TYPE", "SOURCE", "QUEUE", "REASON")
	}
	return h
}

// jobPodCells are the cells of a row of get jobs.
func jobPodCells(r cluster.JobPod, wide bool, now time.Time) []string {
	c := []string{orNone(r.Pod), r.Name, r.Namespace, r.Kind, statusCell(r), orNone(r.Ready), orNone(r.Node), orNone(r.IP), ageOf(now, r.CreatedAt)}
	if wide {
		reason := r.Reason
		if statusCell(r) != r.Status {
			reason = "" // STATUS shows it
		}
		reason = jobReasons(r.JobReason, []cluster.JobPod{{Reason: reason}}) // the job's, then the pod's
		c = append(c, count(r.GPU), r.Pool, orNone(r.GPUType), orNone(r.Source), queueCell(r.Queue), orNone(reason))
	}
	return c
}

// queueCell is a row's place in Kueue's queue: "alice #3" while it waits in the ClusterQueue
// alice, "alice" once admitted, <none> when Kueue does not queue it.
func queueCell(q *cluster.QueueState) string {
	switch {
	case q == nil:
		return orNone("")
	case q.Waiting():
		return fmt.Sprintf("%s #%d", q.ClusterQueue, q.Position)
	}
	return q.ClusterQueue
}

// statusCell is a row's status, with its reason where the status alone does not say what to
// do: a pod that waits for a node ("Pending (0/5 nodes: insufficient nvidia.com/gpu)"), a job
// with no pod ("Pending (suspended)"). The other reasons, and where a Queued or Preempted job
// stands in its queue, are in -o wide's REASON, describe job and -o json.
func statusCell(r cluster.JobPod) string {
	held := r.Status == cluster.StatusQueued || r.Status == cluster.StatusPreempted
	if r.Reason != "" && !held && (r.Pod == "" || r.Status == cluster.StatusPending) {
		return r.Status + " (" + r.Reason + ")"
	}
	return r.Status
}

// jobPodColumns are the columns of get jobs, for printList (a fleet's table); a job that
// MultiKueue runs in a worker cluster is elsewhere there.
func jobPodColumns(now time.Time) listColumns[cluster.JobPod] {
	return listColumns[cluster.JobPod]{
		name:      func(r cluster.JobPod) string { return r.JobID },
		head:      jobPodHeader(false),
		wide:      jobPodHeader(true)[len(jobPodHeader(false)):],
		cells:     func(r cluster.JobPod, wide bool) []string { return jobPodCells(r, wide, now) },
		elsewhere: func(r cluster.JobPod) string { return r.Queue.Worker() },
	}
}

// runsElsewhere reports whether a row's job runs in another cluster (Kueue's MultiKueue
// dispatched it to a worker): one cluster's get jobs then has a CLUSTER column.
func runsElsewhere(rows []cluster.JobPod) bool {
	return slices.ContainsFunc(rows, func(r cluster.JobPod) bool { return r.Queue.Worker() != "" })
}

// workerColumn puts first, when on, the CLUSTER of one cluster's get jobs: the header, or a
// row's worker cluster ("-" for a job that runs in the cluster read).
func workerColumn(on bool, r *cluster.JobPod, cells []string) []string {
	switch {
	case !on:
		return cells
	case r == nil:
		return append([]string{"CLUSTER"}, cells...)
	case r.Queue.Worker() == "":
		return append([]string{"-"}, cells...)
	}
	return append([]string{r.Queue.Worker()}, cells...)
}

// printJobPods prints the rows of get jobs in the -o format, with CLUSTER first when a job runs
// in a worker cluster (runsElsewhere).
func printJobPods(w io.Writer, list cluster.JobPodList, output string, now time.Time) error {
	if ok, err := writeData(w, output, list); ok {
		return err
	}
	if output == outputName {
		var ids []string
		for _, r := range list.Items {
			if len(ids) == 0 || ids[len(ids)-1] != r.JobID {
				ids = append(ids, r.JobID)
			}
		}
		return (&table{}).write(w, columnOf(ids)...)
	}
	wide, workers := output == outputWide, runsElsewhere(list.Items)
	rows := [][]string{workerColumn(workers, nil, jobPodHeader(wide))}
	for _, r := range list.Items {
		rows = append(rows, workerColumn(workers, &r, jobPodCells(r, wide, now)))
	}
	return (&table{}).write(w, rows...)
}

// columnOf makes one row of each value.
func columnOf(values []string) [][]string {
	rows := make([][]string, len(values))
	for i, v := range values {
		rows[i] = []string{v}
	}
	return rows
}

// rowKey identifies a row across the lists of a watch.
func rowKey(r cluster.JobPod) string { return r.JobID + "/" + r.Pod }

// watchJobs prints the rows, then each row that changes, until the command's context ends. A
// pod that is gone is printed once more with its last status and "Deleted". The first rows
// decide whether there is a CLUSTER column (printJobPods).
func watchJobs(cmd *cobra.Command, w io.Writer, m cluster.Model, f cluster.JobPodFilter, wide bool) error {
	tbl := &table{}
	var prev map[string]cluster.JobPod
	workers := false
	return m.WatchJobPods(cmd.Context(), f, func(list cluster.JobPodList) error {
		now := time.Now()
		var rows [][]string
		if prev == nil {
			workers = runsElsewhere(list.Items)
			rows = append(rows, workerColumn(workers, nil, jobPodHeader(wide)))
		}
		next := map[string]cluster.JobPod{}
		for _, r := range list.Items {
			k := rowKey(r)
			next[k] = r
			if old, ok := prev[k]; !ok || !reflect.DeepEqual(old, r) {
				rows = append(rows, workerColumn(workers, &r, jobPodCells(r, wide, now)))
			}
		}
		var gone []string
		for k, r := range prev {
			if _, ok := next[k]; !ok && r.Pod != "" {
				gone = append(gone, k)
			}
		}
		sort.Strings(gone)
		for _, k := range gone {
			r := prev[k]
			r.Status, r.Reason = "Deleted", ""
			rows = append(rows, workerColumn(workers, &r, jobPodCells(r, wide, now)))
		}
		prev = next
		return tbl.write(w, rows...)
	})
}

// getListOptions are the flags of get pools, nodes and quotas.
type getListOptions struct {
	read   readOptions
	output string
	fleet  fleetOptions
}

func (o *getListOptions) bind(cmd *cobra.Command) {
	o.read.BindFlags(cmd.Flags())
	o.fleet.BindFlags(cmd.Flags())
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "output format: wide, json, yaml or name (default: a table)")
}

// run checks -o, builds the model and calls read with it; read's errors are the read
// model's (see readError).
func (o *getListOptions) run(cmd *cobra.Command, read func(context.Context, cluster.Model) error) error {
	if err := outputFlag(o.output, "", outputWide, outputJSON, outputYAML, outputName); err != nil {
		return err
	}
	m, err := o.read.Model(cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	return readError(read(cmd.Context(), m))
}

func newGetPoolsCommand(s Streams) *cobra.Command {
	var o getListOptions
	cmd := &cobra.Command{
		Use:     "pools",
		Aliases: []string{"pool"},
		Short:   "List the pools: nodes, GPU types, GPUs total, used and free",
		Long: `List the pools: those declared by pool files and those named by nodes' g8s.host/pool
label; "default" holds the nodes in no pool. USED counts the GPUs that the active pods on the
pool's nodes request, whoever runs them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.fleet.on() {
				return getFleet(cmd, &o, "pools", poolColumns, func(ctx context.Context, m cluster.Model) ([]cluster.PoolSummary, error) {
					list, err := m.Pools(ctx)
					return list.Items, err
				})
			}
			return o.run(cmd, func(ctx context.Context, m cluster.Model) error {
				list, err := m.Pools(ctx)
				if err != nil {
					return err
				}
				return printPools(s.Out, list, o.output)
			})
		},
	}
	o.bind(cmd)
	return cmd
}

// printPools prints the rows of get pools.
func printPools(w io.Writer, list cluster.PoolList, output string) error {
	return printList(w, output, list, list.Items, poolColumns)
}

// poolColumns are the columns of get pools.
var poolColumns = listColumns[cluster.PoolSummary]{
	name: func(p cluster.PoolSummary) string { return p.Name },
	head: []string{"NAME", "NODES", "GPU TYPE", "GPUS", "USED", "FREE"},
	wide: []string{"STATUS", "DESCRIPTION"},
	cells: func(p cluster.PoolSummary, wide bool) []string {
		r := []string{p.Name, count(p.NodeCount), orNone(strings.Join(p.GPUType, ",")), count(p.GPUTotal), count(p.GPUUsed), count(p.GPUFree)}
		if wide {
			r = append(r, p.Status, orNone(p.Description))
		}
		return r
	},
}

// listColumns say how printList prints the items of a list: the name of each for -o name, the
// header and the cells of each for the table, with the columns that -o wide adds.
type listColumns[T any] struct {
	name       func(T) string
	head, wide []string
	cells      func(item T, wide bool) []string
	// elsewhere, when not nil, is the other cluster in which an item runs (a job that Kueue's
	// MultiKueue dispatched to a worker), "" for one that runs where it is listed: a fleet's
	// CLUSTER is then "<cluster>→<worker>".
	elsewhere func(T) string
}

// printList prints a list as -o json or yaml (data), names, or a table.
func printList[T any](w io.Writer, output string, data any, items []T, c listColumns[T]) error {
	if ok, err := writeData(w, output, data); ok {
		return err
	}
	var rows [][]string
	if output == outputName {
		for _, it := range items {
			rows = append(rows, []string{c.name(it)})
		}
		return (&table{}).write(w, rows...)
	}
	wide := output == outputWide
	head := c.head
	if wide {
		head = append(slices.Clone(head), c.wide...)
	}
	rows = append(rows, head)
	for _, it := range items {
		rows = append(rows, c.cells(it, wide))
	}
	return (&table{}).write(w, rows...)
}

// getNodesOptions are the flags of gpuctl get nodes.
type getNodesOptions struct {
	getListOptions
	filter cluster.NodeFilter
}

func newGetNodesCommand(s Streams) *cobra.Command {
	var o getNodesOptions
	cmd := &cobra.Command{
		Use:     "nodes",
		Aliases: []string{"node"},
		Short:   "List the nodes: pool, GPU type, GPUs and how many are used",
		Long: `List the nodes with their pool (g8s.host/pool, "default" for none), GPU type
(g8s.host/gpu-type), allocatable GPUs, the GPUs their active pods request, and their status as
kubectl shows it. -o wide adds CPU, memory and the node's g8s.host/ labels.`,
		Example: `  gpuctl get nodes --pool training-pool
  gpuctl get nodes --gpu-type a100-80g -o wide`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.fleet.on() {
				return getFleet(cmd, &o.getListOptions, "nodes", nodeColumns, func(ctx context.Context, m cluster.Model) ([]cluster.NodeSummary, error) {
					list, err := m.Nodes(ctx, o.filter)
					return list.Items, err
				})
			}
			return o.run(cmd, func(ctx context.Context, m cluster.Model) error {
				list, err := m.Nodes(ctx, o.filter)
				if err != nil {
					return err
				}
				return printNodes(s.Out, list, o.output)
			})
		},
	}
	o.bind(cmd)
	cmd.Flags().StringVar(&o.filter.Pool, "pool", "", "only the nodes of this pool")
	cmd.Flags().StringVar(&o.filter.GPUType, "gpu-type", "", "only the nodes of this GPU type, e.g. a100-80g")
	return cmd
}

// nodeStatus is kubectl's STATUS of a node: Ready or NotReady, with SchedulingDisabled when
// cordoned.
func nodeStatus(status string, unschedulable bool) string {
	if unschedulable {
		return status + ",SchedulingDisabled"
	}
	return status
}

// printNodes prints the rows of get nodes.
func printNodes(w io.Writer, list cluster.NodeList, output string) error {
	return printList(w, output, list, list.Items, nodeColumns)
}

// nodeColumns are the columns of get nodes.
var nodeColumns = listColumns[cluster.NodeSummary]{
	name: func(n cluster.NodeSummary) string { return n.NodeName },
	head: []string{"NAME", "POOL", "GPU TYPE", "GPUS", "USED", "STATUS"},
	wide: []string{"CPU", "MEMORY", "LABELS"},
	cells: func(n cluster.NodeSummary, wide bool) []string {
		r := []string{n.NodeName, n.Pool, orNone(n.GPUType), count(n.GPUTotal), count(n.GPUUsed), nodeStatus(n.Status, n.Unschedulable)}
		if wide {
			var labels []string
			for _, l := range n.G8sLabels {
				labels = append(labels, l.Key+"="+l.Value)
			}
			r = append(r, n.CPU, n.Memory, orNone(strings.Join(labels, ",")))
		}
		return r
	},
}

func newGetQuotasCommand(s Streams) *cobra.Command {
	var o getListOptions
	cmd := &cobra.Command{
		Use:     "quotas [TEAM]",
		Aliases: []string{"quota"},
		Short:   "List the teams' quotas: GPUs, CPU and memory used of the limit",
		Long: `List gpuctl's quotas (ResourceQuotas of quota files), one per team (its namespace), as
used/limit: what the team's unfinished pods request, as the API server counts it. <none> is
no limit. -o wide adds a bar of the GPUs used. TEAM shows one team's quota.

With queueing: kueue a team's quota is its Kueue ClusterQueue: one row per team and pool,
used/nominal quota (what its admitted jobs reserve, borrowed quota included) and BORROWED, what
it borrows from the other teams; -o wide adds the borrowing and lending limits and the
queue's pending and admitted workloads.`,
		Example: `  gpuctl get quotas
  gpuctl get quotas alice -o wide`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.fleet.on() {
				return getQuotasFleet(cmd, &o, args)
			}
			return o.run(cmd, func(ctx context.Context, m cluster.Model) error {
				var list cluster.QuotaList
				if len(args) == 0 {
					var err error
					if list, err = m.Quotas(ctx); err != nil {
						return err
					}
				} else {
					q, err := m.Quota(ctx, args[0])
					if err != nil {
						return err
					}
					q.Jobs = nil // the use by job is describe quota's
					list.Items = []cluster.Quota{q}
				}
				return printQuotas(s.Out, list, o.output)
			})
		},
	}
	o.bind(cmd)
	return cmd
}

// printQuotas prints the rows of get quotas: one per ResourceQuota, and, when a team's quota
// is its Kueue ClusterQueue, one per pool of it, with the columns POOL and BORROWED (and -o
// wide the queue's limits and workloads).
func printQuotas(w io.Writer, list cluster.QuotaList, output string) error {
	rows, queues := quotaRows(list.Items, output)
	return printList(w, output, list, rows, quotaColumns(queues))
}

// quotaRows are the rows of the quotas: one per quota, or one per pool of a team's
// ClusterQueue (then queues is true).
func quotaRows(quotas []cluster.Quota, output string) (rows []quotaRow, queues bool) {
	for _, q := range quotas {
		if q.Queue == nil || len(q.Queue.Pools) == 0 || output == outputName {
			rows = append(rows, quotaRow{quota: q})
			continue
		}
		queues = true
		for i := range q.Queue.Pools {
			rows = append(rows, quotaRow{quota: q, pool: &q.Queue.Pools[i]})
		}
	}
	return rows, queues
}

// quotaColumns are the columns of get quotas; with queues, those of ClusterQueues' pools.
func quotaColumns(queues bool) listColumns[quotaRow] {
	c := listColumns[quotaRow]{
		name: func(r quotaRow) string { return r.quota.User },
		head: []string{"TEAM", "GPU", "CPU", "MEMORY"},
		wide: []string{"GPU USE"},
		cells: func(r quotaRow, wide bool) []string {
			used, hard, usage := r.use()
			row := []string{r.quota.User, usedOf(used.GPU, hard.GPU), usedOf(used.CPU, hard.CPU), usedOf(used.Memory, hard.Memory)}
			if wide {
				row = append(row, bar(usage.GPU))
			}
			return row
		},
	}
	if queues {
		c.head = []string{"TEAM", "POOL", "GPU", "CPU", "MEMORY", "BORROWED"}
		c.wide = []string{"GPU USE", "BORROWING LIMIT", "LENDING LIMIT", "PENDING", "ADMITTED"}
		c.cells = quotaRow.queueCells
	}
	return c
}

// quotaRow is a row of get quotas: a quota, or one pool of a team's ClusterQueue.
type quotaRow struct {
	quota cluster.Quota
	pool  *cluster.QuotaPool
}

// use is the row's use, limits (the pool's nominal quota) and their percentages.
func (r quotaRow) use() (used, hard cluster.QuotaResources, usage cluster.QuotaUsage) {
	if r.pool != nil {
		return r.pool.Used, r.pool.Nominal, r.pool.Usage
	}
	return r.quota.Used, r.quota.Hard, r.quota.Usage
}

// queueCells are the cells of a row when some quota is a ClusterQueue; a ResourceQuota's
// row has no pool, nothing borrowed and no queue.
func (r quotaRow) queueCells(wide bool) []string {
	used, hard, usage := r.use()
	pool, borrowed, borrowing, lending := orNone(""), orNone(""), orNone(""), orNone("")
	if p := r.pool; p != nil {
		pool, borrowed = p.Pool, resourcesText(p.Borrowed, true)
		borrowing, lending = resourcesText(p.BorrowingLimit, false), resourcesText(p.LendingLimit, false)
	}
	row := []string{r.quota.User, pool, usedOf(used.GPU, hard.GPU), usedOf(used.CPU, hard.CPU), usedOf(used.Memory, hard.Memory), borrowed}
	if !wide {
		return row
	}
	pending, admitted := orNone(""), orNone("")
	if q := r.quota.Queue; q != nil {
		pending, admitted = count(q.Pending), count(q.Admitted)
	}
	return append(row, bar(usage.GPU), borrowing, lending, pending, admitted)
}

// resourcesText lists the resources that are set as kubectl does, "gpu=4,cpu=8,memory=32Gi",
// leaving out zeros when skipZero; <none> when none is left.
func resourcesText(r cluster.QuotaResources, skipZero bool) string {
	var parts []string
	if r.GPU != nil && (*r.GPU != 0 || !skipZero) {
		parts = append(parts, fmt.Sprintf("gpu=%d", *r.GPU))
	}
	if r.CPU != nil && (*r.CPU != 0 || !skipZero) {
		parts = append(parts, fmt.Sprintf("cpu=%g", *r.CPU))
	}
	if r.Memory != nil && (*r.Memory != "0" || !skipZero) {
		parts = append(parts, "memory="+*r.Memory)
	}
	return orNone(strings.Join(parts, ","))
}

// usedOf is "<used>/<hard>", or <none> without a limit.
func usedOf[T any](used, hard *T) string {
	if hard == nil {
		return orNone("")
	}
	u := "0"
	if used != nil {
		u = fmt.Sprint(*used)
	}
	return u + "/" + fmt.Sprint(*hard)
}

// barWidth is the number of cells of a usage bar.
const barWidth = 10

// bar draws a percentage as "[####------] 40%", or <none> without a limit; use above the
// limit fills the bar.
func bar(percent *float64) string {
	if percent == nil {
		return orNone("")
	}
	full := min(barWidth, max(0, int(*percent*barWidth/100+0.5)))
	return "[" + strings.Repeat("#", full) + strings.Repeat("-", barWidth-full) + "] " + fmt.Sprintf("%g%%", *percent)
}
