package cluster

import (
	"context"
	"regexp"
	"slices"
	"strings"

	"github.com/gpuctl/gpuctl/drift"
)

// Scoped is a Model that shows the namespaced part of another Model for some namespaces only:
// the daemon's API answers a token that a team holds with it. Jobs, their events and logs, and
// quotas exist only in its namespaces: a job of another namespace is unknown (a
// *NotFoundError with the same message as a job that does not exist), a bare job name resolves
// only among its namespaces (an *AmbiguousError lists only theirs), and lists leave the others
// out before they are paged. Pools and nodes are shared by every team and shown whole, except
// the jobs of a pool, which are those of its namespaces. A job's queue state (Kueue) names only
// its own team's ClusterQueue, and a preemptor of another namespace as "another team's job";
// the cohort's lending is an aggregate over the other teams, and is shown.
type Scoped struct {
	// Model is the whole model.
	Model Model
	// Namespaces are the namespaces it shows; none shows no job, event, log or quota.
	Namespaces []string
}

var _ Model = (*Scoped)(nil)

// Scope returns the Model that shows m for the namespaces only.
func Scope(m Model, namespaces []string) *Scoped {
	return &Scoped{Model: m, Namespaces: slices.Clone(namespaces)}
}

func (s *Scoped) sees(namespace string) bool { return slices.Contains(s.Namespaces, namespace) }

// Jobs lists the page of the jobs of the namespaces that the filter selects.
func (s *Scoped) Jobs(ctx context.Context, f JobFilter) (JobList, error) {
	page := f.Page
	f.Page = Page{}
	all, err := s.Model.Jobs(ctx, f)
	if err != nil {
		return JobList{}, err
	}
	mine := slices.DeleteFunc(all.Items, func(j JobSummary) bool { return !s.sees(j.Namespace) })
	for i := range mine {
		mine[i].Queue = s.hide(mine[i].Queue)
	}
	return JobList{Total: len(mine), Page: page.number(), PageSize: page.Size, Items: paginate(mine, page)}, nil
}

// resolve turns a job id or bare name into the id of a job of the namespaces, with the
// errors that Reader.Job gives for the jobs it shows.
func (s *Scoped) resolve(ctx context.Context, id string) (string, error) {
	ns, name := splitJobID(id)
	if ns != "" {
		if !s.sees(ns) {
			return "", noJob(id)
		}
		return id, nil
	}
	list, err := s.Jobs(ctx, JobFilter{})
	if err != nil {
		return "", err
	}
	var ids []string
	for _, j := range list.Items {
		if j.Name == name {
			ids = append(ids, j.JobID)
		}
	}
	switch len(ids) {
	case 0:
		return "", noJob(name)
	case 1:
		return ids[0], nil
	}
	return "", ambiguous(name, ids)
}

// Job returns a job of the namespaces.
func (s *Scoped) Job(ctx context.Context, id string) (JobDetail, error) {
	full, err := s.resolve(ctx, id)
	if err != nil {
		return JobDetail{}, err
	}
	d, err := s.Model.Job(ctx, full)
	s.hideDetail(&d)
	return d, err
}

// hideDetail hides the preemptors of other namespaces in a job's queue state, reason and
// attempts.
func (s *Scoped) hideDetail(d *JobDetail) {
	old := d.Queue
	d.Queue = s.hide(old)
	d.Reason = s.hideReason(d.Reason, old, d.Queue)
	for i := range d.Attempts {
		d.Attempts[i].Reason = s.hideReason(d.Attempts[i].Reason, nil, nil)
	}
}

// scheduledPreemptor finds "Preempted by <namespace>/<job>" in a reason (attempts.go).
var scheduledPreemptor = regexp.MustCompile(`Preempted by ([a-z0-9][-a-z0-9]*)/[a-z0-9][-a-z0-9.]*`)

// hideReason rewrites a reason that names a preemptor of a namespace it does not show: the
// scheduler's ("Preempted by bob/big" becomes "Preempted by another team's job"), and
// Kueue's of the queue state old that hide made into hidden.
func (s *Scoped) hideReason(reason string, old, hidden *QueueState) string {
	if old != hidden && old.PreemptedBy != nil {
		reason = strings.ReplaceAll(reason, old.PreemptedBy.String(), hidden.PreemptedBy.String())
	}
	return scheduledPreemptor.ReplaceAllStringFunc(reason, func(m string) string {
		if s.sees(scheduledPreemptor.FindStringSubmatch(m)[1]) {
			return m
		}
		return "Preempted by another team's job"
	})
}

// hide leaves out of a queue state the preemptor of a namespace it does not show.
func (s *Scoped) hide(q *QueueState) *QueueState {
	if q == nil || q.PreemptedBy == nil || q.PreemptedBy.Namespace != "" && s.sees(q.PreemptedBy.Namespace) {
		return q
	}
	c, p := *q, *q.PreemptedBy
	p.JobID, p.Namespace, p.UID = "", "", ""
	c.PreemptedBy = &p
	return &c
}

// hideRows hides the preemptors of the rows as hide does, and rewrites the reasons that name
// them.
func (s *Scoped) hideRows(rows []JobPod) {
	for i := range rows {
		r := &rows[i]
		old := r.Queue
		if r.Queue = s.hide(old); r.Queue != old && r.Reason == old.Summary() {
			r.Reason = r.Queue.Summary()
		}
		r.JobReason = s.hideReason(r.JobReason, old, r.Queue)
	}
}

// Pools lists every pool.
func (s *Scoped) Pools(ctx context.Context) (PoolList, error) { return s.Model.Pools(ctx) }

// Pool returns a pool with the jobs of the namespaces only.
func (s *Scoped) Pool(ctx context.Context, name string) (PoolDetail, error) {
	d, err := s.Model.Pool(ctx, name)
	if err != nil {
		return PoolDetail{}, err
	}
	d.Jobs = slices.DeleteFunc(d.Jobs, func(j PoolJob) bool {
		ns, _ := splitJobID(j.JobID)
		return !s.sees(ns)
	})
	return d, nil
}

// Nodes lists the nodes that pass the filter.
func (s *Scoped) Nodes(ctx context.Context, f NodeFilter) (NodeList, error) {
	return s.Model.Nodes(ctx, f)
}

// Node returns one node with the pods of the namespaces only among those using its GPUs.
func (s *Scoped) Node(ctx context.Context, name string) (NodeDetail, error) {
	d, err := s.Model.Node(ctx, name)
	if err != nil {
		return NodeDetail{}, err
	}
	d.Pods = slices.DeleteFunc(d.Pods, func(p NodePod) bool { return !s.sees(p.Namespace) })
	return d, nil
}

// Quotas lists the quotas of the namespaces.
func (s *Scoped) Quotas(ctx context.Context) (QuotaList, error) {
	list, err := s.Model.Quotas(ctx)
	if err != nil {
		return QuotaList{}, err
	}
	list.Items = slices.DeleteFunc(list.Items, func(q Quota) bool { return !s.sees(q.Namespace) })
	return list, nil
}

// Quota returns the quota of a user (namespace) of the namespaces.
func (s *Scoped) Quota(ctx context.Context, user string) (Quota, error) {
	if !s.sees(user) {
		return Quota{}, noQuota(user)
	}
	return s.Model.Quota(ctx, user)
}

// JobEvents returns the events of a job of the namespaces.
func (s *Scoped) JobEvents(ctx context.Context, id string) (EventList, error) {
	full, err := s.resolve(ctx, id)
	if err != nil {
		return EventList{}, err
	}
	return s.Model.JobEvents(ctx, full)
}

// Events returns the events of the jobs of namespace, or of all the namespaces for "": none
// for a namespace it does not show.
func (s *Scoped) Events(ctx context.Context, namespace string) (EventList, error) {
	switch {
	case namespace != "" && !s.sees(namespace), namespace == "" && len(s.Namespaces) == 0:
		return EventList{Items: []Event{}}, nil
	case namespace == "" && len(s.Namespaces) == 1:
		namespace = s.Namespaces[0]
	}
	list, err := s.Model.Events(ctx, namespace)
	if err != nil {
		return EventList{}, err
	}
	list.Items = slices.DeleteFunc(list.Items, func(e Event) bool { return !s.sees(e.Namespace) })
	return list, nil
}

// Logs streams the log lines of a job of the namespaces.
func (s *Scoped) Logs(ctx context.Context, id string, opts LogOptions, emit func(LogLine) error) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	full, err := s.resolve(ctx, id)
	if err != nil {
		return err
	}
	return s.Model.Logs(ctx, full, opts, emit)
}

// JobPods lists the rows of the jobs of the namespaces; a namespace filter it does not show
// selects nothing.
func (s *Scoped) JobPods(ctx context.Context, f JobPodFilter) (JobPodList, error) {
	if f.Namespace != "" && !s.sees(f.Namespace) {
		return JobPodList{Items: []JobPod{}}, nil
	}
	list, err := s.Model.JobPods(ctx, f)
	if err != nil {
		return JobPodList{}, err
	}
	list.Items = slices.DeleteFunc(list.Items, func(p JobPod) bool { return !s.sees(p.Namespace) })
	s.hideRows(list.Items)
	return list, nil
}

// WatchJobPods calls emit with the rows of the jobs of the namespaces each time they change;
// for a namespace it does not show, once with none, then it waits for ctx as every watch does.
func (s *Scoped) WatchJobPods(ctx context.Context, f JobPodFilter, emit func(JobPodList) error) error {
	if f.Namespace != "" && !s.sees(f.Namespace) {
		if err := emit(JobPodList{Items: []JobPod{}}); err != nil {
			return err
		}
		<-ctx.Done()
		return nil
	}
	return s.Model.WatchJobPods(ctx, f, func(list JobPodList) error {
		list.Items = slices.DeleteFunc(list.Items, func(p JobPod) bool { return !s.sees(p.Namespace) })
		s.hideRows(list.Items)
		return emit(list)
	})
}

// JobDescription describes a job of the namespaces; drift items of objects outside them
// (cluster-scoped objects name other teams) are left out.
func (s *Scoped) JobDescription(ctx context.Context, id string) (JobDescription, error) {
	full, err := s.resolve(ctx, id)
	if err != nil {
		return JobDescription{}, err
	}
	d, err := s.Model.JobDescription(ctx, full)
	if err != nil {
		return JobDescription{}, err
	}
	d.Drift = slices.DeleteFunc(d.Drift, func(it drift.Item) bool { return !s.sees(it.Object.Namespace) })
	s.hideDetail(&d.Job)
	s.hideRows(d.Pods)
	return d, nil
}
