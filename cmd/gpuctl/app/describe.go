package app

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuctl/gpuctl/cluster"
	"github.com/gpuctl/gpuctl/cmd/options"
	"github.com/gpuctl/gpuctl/internal/humanize"
)

// describeOptions are the flags of the describe commands.
type describeOptions struct {
	read      readOptions
	namespace string
	output    string
	// prom is describe job's Prometheus, for its Usage section.
	prom options.Prometheus
	// fleet finds the job in the cluster of the fleet that has it (describe job).
	fleet fleetOptions
}

func newDescribeCommand(s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "describe job|pool|node|quota NAME",
		Short: "Show what a person needs to act on a job, pool, node or quota",
		Long: `Show one job, pool, node or quota in full:

  gpuctl describe job JOB       its status and why, the Git file and revision that declared it,
                                its GPUs, pool and priority, its place in Kueue's queue, its
                                pods with their reasons, its GPU usage over its life as
                                sparklines (with --prometheus-url, or the daemon's with
                                --server), its last events and its drift
  gpuctl describe pool POOL     its nodes with their free GPUs, and its unfinished jobs
  gpuctl describe node NODE     its GPUs and the pods that use them
  gpuctl describe quota TEAM    the team's limits and use (with Kueue: by pool, with what it
                                borrows, its limits and its queue's workloads), and the use by job

-o json|yaml prints the read model's data. An unknown name exits 1, an ambiguous job name 2
(the error lists the candidates).`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(describeSub(s, "job JOB", "job", "Describe a job: status and why, Git source, resources, pods, events, drift",
		func(ctx context.Context, m cluster.Model, o *describeOptions, name string, w io.Writer, now time.Time) error {
			d, err := m.JobDescription(ctx, jobID(o.namespace, name))
			if err != nil {
				return err
			}
			// MultiKueue runs the job in a worker cluster: its pods are there. Without the
			// worker, what the manager knows is printed, and the exit code is 1.
			var unread error
			if worker := d.Job.Queue.Worker(); worker != "" {
				wm, err := workerModel(s.Err, d.Job.JobID, worker, "pods")
				if err == nil {
					var wd cluster.JobDescription
					if wd, err = wm.JobDescription(ctx, d.Job.JobID); err == nil {
						if err = checkCopy(worker, d.Job.JobID, d.Job.Queue.Workload, wd.Job.Queue); err == nil {
							d = withWorker(d, wd)
						}
					}
					err = workerError(worker, err)
				}
				if Code(err) == ExitTrouble {
					return err
				}
				unread = err
			}
			if err := printDescribed(w, o.output, d, func() error {
				u := readJobUsage(ctx, &o.prom, m, d, now)
				return describeJob(w, d, now, &u)
			}); err != nil {
				return err
			}
			return unread
		}),
		describeSub(s, "pool POOL", "pool", "Describe a pool: its nodes and their free GPUs, its jobs",
			func(ctx context.Context, m cluster.Model, o *describeOptions, name string, w io.Writer, _ time.Time) error {
				p, err := m.Pool(ctx, name)
				if err != nil {
					return err
				}
				nodes, err := m.Nodes(ctx, cluster.NodeFilter{Pool: name})
				if err != nil {
					return err
				}
				return printDescribed(w, o.output, p, func() error { return describePool(w, p, nodes) })
			}),
		describeSub(s, "node NODE", "node", "Describe a node: its GPUs and the pods that use them",
			func(ctx context.Context, m cluster.Model, o *describeOptions, name string, w io.Writer, _ time.Time) error {
				n, err := m.Node(ctx, name)
				if err != nil {
					return err
				}
				return printDescribed(w, o.output, n, func() error { return describeNode(w, n) })
			}),
		describeSub(s, "quota TEAM", "quota", "Describe a team's quota: limits, use (by pool, with Kueue), and use by job",
			func(ctx context.Context, m cluster.Model, o *describeOptions, name string, w io.Writer, _ time.Time) error {
				q, err := m.Quota(ctx, name)
				if err != nil {
					return err
				}
				return printDescribed(w, o.output, q, func() error { return describeQuota(w, q) })
			}))
	return cmd
}

// describeFunc reads one thing by name and prints it.
type describeFunc func(ctx context.Context, m cluster.Model, o *describeOptions, name string, w io.Writer, now time.Time) error

// describeSub builds one describe command; use is "<what> NAME".
func describeSub(s Streams, use, what, short string, run describeFunc) *cobra.Command {
	var o describeOptions
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outputFlag(o.output, "", outputJSON, outputYAML); err != nil {
				return err
			}
			var m cluster.Model
			var err error
			if o.fleet.on() {
				m, err = o.fleet.jobModel(cmd.Context(), s.Err, jobID(o.namespace, args[0]))
			} else {
				m, err = o.read.Model(s.Err)
			}
			if err != nil {
				return err
			}
			return readError(run(cmd.Context(), m, &o, args[0], s.Out, time.Now()))
		},
	}
	o.read.BindFlags(cmd.Flags())
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "output format: json or yaml (default: text)")
	if what == "job" {
		cmd.Aliases = []string{"jobs"}
		cmd.ValidArgsFunction = completeJobs(&o.read)
		cmd.Example = "  gpuctl describe job alice.qwen2-sft\n  gpuctl describe job qwen2-sft -n alice -o json"
		cmd.Flags().StringVarP(&o.namespace, "namespace", "n", "", "the job's namespace (else JOB is <namespace>.<name> or a name one namespace has)")
		o.prom.BindFlags(cmd.Flags())
		o.fleet.BindFlags(cmd.Flags())
	}
	return cmd
}

// printDescribed writes v as -o json or yaml, or calls text.
func printDescribed(w io.Writer, output string, v any, text func() error) error {
	if ok, err := writeData(w, output, v); ok {
		return err
	}
	return text()
}

// fields writes "Key:  value" lines aligned, as kubectl describe does; empty values are left out.
func fields(w io.Writer, indent string, kv ...string) error {
	var rows [][]string
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			rows = append(rows, []string{kv[i] + ":", kv[i+1]})
		}
	}
	return (&table{indent: indent}).write(w, rows...)
}

// section writes a heading and, indented, a table or "<none>".
func section(w io.Writer, title string, rows [][]string) error {
	fmt.Fprintln(w, title+":")
	if len(rows) <= 1 {
		fmt.Fprintln(w, "  "+orNone(""))
		return nil
	}
	return (&table{indent: "  "}).write(w, rows...)
}

// at is a time and how long ago it was: "2024-06-01T10:00:00Z (5m ago)".
func at(t *time.Time, now time.Time) string {
	if t == nil || t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339) + " (" + ago(t, now) + ")"
}

// describeJob writes a job description as text, with its Usage section when u is not nil.
func describeJob(w io.Writer, d cluster.JobDescription, now time.Time, u *jobUsage) error {
	j := d.Job
	res := j.Resources
	perPod := []string{humanize.Plural(res.GPU, "GPU")}
	if res.GPUType != "" {
		perPod[0] += " (" + res.GPUType + ")"
	}
	if res.GPUShare > 0 {
		perPod = append(perPod, fmt.Sprintf("%d GiB of GPU memory", res.GPUShare))
	}
	if res.CPU > 0 { // a pod that asks for none has none shown, not "0 CPU"
		perPod = append(perPod, fmt.Sprintf("%g CPU", res.CPU))
	}
	if res.Memory != "" && res.Memory != "0" {
		perPod = append(perPod, res.Memory+" memory")
	}
	resources := strings.Join(perPod, ", ") + " per pod"
	if res.Pods != 1 {
		resources += fmt.Sprintf(" × %s = %s", humanize.Plural(res.Pods, "pod"), humanize.Plural(res.GPUTotal, "GPU"))
	}
	if err := fields(w, "",
		"Name", j.Name, "Namespace", j.Namespace, "Job ID", j.JobID,
		"Kind", j.Kind+" ("+j.K8sResources.Kind+" "+j.K8sResources.JobName+")",
		"Description", j.Description, "Status", j.Status, "Reason", jobReasons(j.Reason, d.Pods),
		"Runs on", runsOn(j.Queue), "Dispatched by", dispatchedBy(j.Queue),
		"Source", orNone(j.Source), "Revision", orNone(humanize.Revision(d.Revision)),
		"Pool", j.Pool, "Priority", orNone(j.Priority), "Resources", resources,
		"Created", at(&j.CreatedAt, now), "Started", at(j.StartedAt, now),
	); err != nil {
		return err
	}
	if err := describeQueue(w, j.Queue, now); err != nil {
		return err
	}
	pods := [][]string{{"POD", "STATUS", "READY", "RESTARTS", "NODE", "IP", "AGE", "REASON"}}
	for _, p := range d.Pods {
		if p.Pod == "" {
			continue
		}
		name := p.Pod
		if p.Rank != nil {
			name += fmt.Sprintf(" (rank %d)", *p.Rank)
		}
		pods = append(pods, []string{name, p.Status, p.Ready, count(p.Restarts), orNone(p.Node), orNone(p.IP), ageOf(now, p.CreatedAt), orNone(p.Reason)})
	}
	if err := section(w, "Pods", pods); err != nil {
		return err
	}
	if err := describeAttempts(w, j.Attempts, d.LastLog, now); err != nil {
		return err
	}
	if u != nil {
		if err := describeUsage(w, *u); err != nil {
			return err
		}
	}
	events := [][]string{eventHead}
	for _, e := range d.Events {
		events = append(events, eventCells(e, now))
	}
	if err := section(w, "Events", events); err != nil {
		return err
	}
	drifted := [][]string{{"CATEGORY", "OBJECT", "BY", "DETAIL"}}
	for _, it := range d.Drift {
		drifted = append(drifted, []string{string(it.Category), it.Object.String(), orNone(it.Manager), oneLine(it.Message)})
	}
	return section(w, "Drift", drifted)
}

// runsOn is where Kueue's MultiKueue runs a job it dispatched from this cluster: "cluster gpu-b
// (MultiKueue)", "no cluster yet (MultiKueue sent it to gpu-a, gpu-b)"; "" for another job.
func runsOn(q *cluster.QueueState) string {
	switch {
	case q.Worker() != "":
		return "cluster " + q.Cluster + " (MultiKueue)"
	case q != nil && len(q.Nominated) > 0:
		return "no cluster yet (MultiKueue sent it to " + strings.Join(q.Nominated, ", ") + ")"
	}
	return ""
}

// dispatchedBy says that a job is MultiKueue's copy of a manager cluster's job: "MultiKueue of
// a manager cluster (origin multikueue)"; "" for a job committed to this cluster.
func dispatchedBy(q *cluster.QueueState) string {
	if q == nil || q.Origin == "" {
		return ""
	}
	return "MultiKueue of a manager cluster (origin " + q.Origin + ")"
}

// describeQueue writes a job's place in Kueue's queue, when Kueue queues it.
func describeQueue(w io.Writer, q *cluster.QueueState, now time.Time) error {
	if q == nil {
		return nil
	}
	position := ""
	if q.Waiting() {
		position = fmt.Sprintf("#%d of %d", q.Position, q.Pending)
	}
	priority := fmt.Sprint(q.Priority)
	if q.PriorityClass != "" {
		priority += " (" + q.PriorityClass + ")"
	}
	preempted := ""
	if q.State == cluster.QueuePreempted {
		preempted = q.PreemptedBy.String()
	}
	evicted := ""
	if q.State == cluster.QueueEvicted {
		evicted = q.Reason
	}
	fmt.Fprintln(w, "Queue:")
	return fields(w, "  ", "ClusterQueue", q.ClusterQueue+" (LocalQueue "+orNone(q.LocalQueue)+", Workload "+q.Workload+")",
		"State", q.State, "Position", position, "Priority", priority, "Waits for", q.WaitText(),
		"Kueue says", q.Message, "Admitted to", strings.Join(q.Flavors, ", "), "Preempted", preempted,
		"Evicted", evicted, "Queued since", at(&q.QueuedAt, now), "Admitted at", at(q.AdmittedAt, now),
		"Evicted at", at(q.EvictedAt, now), "Finished at", at(q.FinishedAt, now))
}

// describeAttempts writes the pods a training Job ran, those gone included, and the last log
// lines of the one that failed it; nothing for a job of another kind.
func describeAttempts(w io.Writer, atts []cluster.Attempt, lastLog []cluster.LogLine, now time.Time) error {
	if len(atts) == 0 {
		return nil
	}
	rows := [][]string{{"#", "POD", "NODE", "START", "END", "OUTCOME", "EXIT CODE", "REASON"}}
	for i, a := range atts {
		pod, code := a.Pod, orNone("")
		if a.Rank != nil {
			pod += fmt.Sprintf(" (rank %d)", *a.Rank)
		}
		if a.Gone {
			pod += " (gone)"
		}
		if a.ExitCode != nil {
			code = fmt.Sprint(*a.ExitCode)
		}
		rows = append(rows, []string{fmt.Sprint(i + 1), pod, orNone(a.Node), orNone(ago(a.Start, now)),
			orNone(ago(a.End, now)), a.Outcome, code, orNone(a.Reason)})
	}
	if err := section(w, "Attempts", rows); err != nil {
		return err
	}
	if len(lastLog) == 0 {
		return nil
	}
	fmt.Fprintf(w, "Last log lines (%s):\n", lastLog[0].Prefix)
	for _, l := range lastLog {
		fmt.Fprintln(w, "  "+l.Text)
	}
	return nil
}

// ago is how long ago a time was ("5m ago"), "" for none.
func ago(t *time.Time, now time.Time) string {
	if t == nil || t.IsZero() {
		return ""
	}
	return humanize.Age(now.Sub(*t)) + " ago"
}

// jobReasons is the job's reason, then the distinct reasons of its pods that it does not say.
func jobReasons(job string, pods []cluster.JobPod) string {
	switch p := podReasons(pods); {
	case job == "":
		return p
	case p == "":
		return job
	default:
		return job + "; " + p
	}
}

// podReasons are the distinct reasons of a job's pods, joined: why its pods are where they are.
func podReasons(pods []cluster.JobPod) string {
	var out []string
	seen := map[string]bool{}
	for _, p := range pods {
		if p.Reason != "" && !seen[p.Reason] {
			seen[p.Reason] = true
			out = append(out, p.Reason)
		}
	}
	return strings.Join(out, "; ")
}

// describePool writes a pool as text, its nodes as get nodes lists them.
func describePool(w io.Writer, p cluster.PoolDetail, nodes cluster.NodeList) error {
	var types []string
	for t, n := range p.GPUType {
		types = append(types, fmt.Sprintf("%s: %d", t, n))
	}
	sort.Strings(types)
	declared := []string{}
	for _, n := range p.DeclaredNodes {
		declared = append(declared, n.Name)
	}
	registered := "no (named by node labels only)"
	if p.Registered {
		registered = "yes (a pool file)"
	}
	if err := fields(w, "", "Name", p.Name, "Description", p.Description, "Status", p.Status,
		"Registered", registered, "Declared nodes", orNone(strings.Join(declared, ", ")),
		"GPU types", orNone(strings.Join(types, ", ")),
		"GPUs", fmt.Sprintf("%d total, %d used, %d free", p.GPUTotal, p.GPUUsed, p.GPUFree)); err != nil {
		return err
	}
	rows := [][]string{{"NODE", "GPU TYPE", "GPUS", "USED", "FREE", "STATUS"}}
	for _, n := range nodes.Items {
		rows = append(rows, []string{n.NodeName, orNone(n.GPUType), count(n.GPUTotal), count(n.GPUUsed), count(n.GPUFree), nodeStatus(n.Status, n.Unschedulable)})
	}
	if err := section(w, "Nodes", rows); err != nil {
		return err
	}
	jobs := [][]string{{"JOB", "KIND", "STATUS", "GPUS"}}
	for _, j := range p.Jobs {
		jobs = append(jobs, []string{j.JobID, j.Kind, j.Status, count(j.GPU)})
	}
	return section(w, "Jobs", jobs)
}

// describeNode writes a node as text.
func describeNode(w io.Writer, n cluster.NodeDetail) error {
	r := n.Resources
	if err := fields(w, "", "Name", n.NodeName, "Status", nodeStatus(n.Status, n.Unschedulable),
		"Pool", n.Pool, "GPU type", orNone(n.GPUType),
		"GPUs", fmt.Sprintf("%d total, %d used, %d free", r.GPUTotal, r.GPUUsed, r.GPUFree),
		"CPU", fmt.Sprintf("%g of %g requested", r.CPUUsed, r.CPUTotal),
		"Memory", r.MemoryUsed+" of "+r.MemoryTotal+" requested"); err != nil {
		return err
	}
	labels := [][]string{{"KEY", "VALUE"}}
	for _, l := range n.Labels {
		labels = append(labels, []string{l.Key, l.Value})
	}
	if err := section(w, "Labels", labels); err != nil {
		return err
	}
	rows := [][]string{{"NAMESPACE", "POD", "JOB", "GPUS", "STATUS"}}
	for _, p := range n.Pods {
		rows = append(rows, []string{p.Namespace, p.Name, orNone(p.JobID), count(p.GPU), p.Status})
	}
	return section(w, "GPU pods", rows)
}

// describeQuota writes a quota as text; a team's ClusterQueue also with its workloads and
// its quota by pool (the totals are over its pools).
func describeQuota(w io.Writer, q cluster.Quota) error {
	name, workloads := q.Namespace+"/"+q.Name, ""
	if qq := q.Queue; qq != nil {
		name = q.Name + " (ClusterQueue " + qq.ClusterQueue
		if qq.Cohort != "" {
			name += ", cohort " + qq.Cohort
		}
		name += ")"
		workloads = fmt.Sprintf("%d pending, %d admitted", qq.Pending, qq.Admitted)
	}
	if err := fields(w, "", "Team", q.User, "Quota", name,
		"GPU", quotaUse(q.Used.GPU, q.Hard.GPU, q.Usage.GPU),
		"CPU", quotaUse(q.Used.CPU, q.Hard.CPU, q.Usage.CPU),
		"Memory", quotaUse(q.Used.Memory, q.Hard.Memory, q.Usage.Memory),
		"Workloads", workloads); err != nil {
		return err
	}
	if q.Queue != nil {
		rows := [][]string{{"POOL", "GPU", "CPU", "MEMORY", "BORROWED", "BORROWING LIMIT", "LENDING LIMIT"}}
		for _, p := range q.Queue.Pools {
			rows = append(rows, []string{p.Pool, usedOf(p.Used.GPU, p.Nominal.GPU), usedOf(p.Used.CPU, p.Nominal.CPU),
				usedOf(p.Used.Memory, p.Nominal.Memory), resourcesText(p.Borrowed, true),
				resourcesText(p.BorrowingLimit, false), resourcesText(p.LendingLimit, false)})
		}
		if err := section(w, "Pools", rows); err != nil {
			return err
		}
	}
	rows := [][]string{{"JOB", "PODS", "GPUS", "CPU", "MEMORY"}}
	for _, j := range q.Jobs {
		id := j.JobID
		if id == "" {
			id = "(pods of no gpuctl job)"
		}
		rows = append(rows, []string{id, count(j.Pods), count(j.GPU), fmt.Sprintf("%g", j.CPU), j.Memory})
	}
	return section(w, "Use by job", rows)
}

// quotaUse is "<used>/<hard> <bar>", or <none> without a limit.
func quotaUse[T any](used, hard *T, percent *float64) string {
	if hard == nil {
		return orNone("")
	}
	return usedOf(used, hard) + " " + bar(percent)
}
