package edit

import (
	"strconv"

	"github.com/gpuctl/gpuctl/render"
)

// Pause stops a workload through its file: a training job gets job.suspend: true (its Job is
// rendered suspended; with queueing kueue see docs/format.md §4.3); an inference, notebook or
// compute service gets service.replicas: 0 and service.pausedReplicas: the replicas it ran,
// which Resume restores. A job already paused is an *UnchangedError.
func (r *Repo) Pause(ref JobRef) (*Result, error) {
	return r.pauseOrResume(ref, true)
}

// Resume undoes Pause: a training job's job.suspend is removed (set to false when it comes
// from a merged mapping); a service gets back the replicas of service.pausedReplicas, which
// is removed.
func (r *Repo) Resume(ref JobRef) (*Result, error) {
	return r.pauseOrResume(ref, false)
}

func (r *Repo) pauseOrResume(ref JobRef, pause bool) (*Result, error) {
	verb := "resume"
	if pause {
		verb = "pause"
	}
	base, w, t, err := r.locate(ref)
	if err != nil {
		return nil, err
	}
	var change Change
	var verify func(*render.Document) bool
	if w.Kind == render.KindTraining {
		change, verify, err = t.suspend(w, pause)
	} else if pause {
		change, verify, err = t.pauseService(w)
	} else {
		change, verify, err = t.resumeService(w)
	}
	if err != nil {
		return nil, err
	}
	return r.finish(base, verb, w, t, change, verify)
}

// suspend writes job.suspend of a training job.
func (t *text) suspend(w found, pause bool) (Change, func(*render.Document) bool, error) {
	if w.doc.Workload.Job.Suspend == pause {
		reason := "is not paused"
		if pause {
			reason = "is already paused"
		}
		return Change{}, nil, &UnchangedError{Workload: w.Workload, Reason: reason}
	}
	verify := func(d *render.Document) bool { return d.Workload != nil && d.Workload.Job.Suspend == pause }
	job, err := t.mapping(w, "job")
	if err != nil {
		return Change{}, nil, err
	}
	if job == nil {
		return Change{}, nil, t.refuse(w.doc.Pos.Line, "job", "the document has no job block of its own")
	}
	if k, _ := entry(job, "suspend"); !pause && k != nil && !hasMerge(job) {
		sp, err := t.removeEntry(job, "job", "suspend")
		return modified(t, sp), verify, err
	}
	sps, err := t.setEntries(job, "job", []string{"name"}, [][2]string{{"suspend", strconv.FormatBool(pause)}})
	return modified(t, sps...), verify, err
}

// replicas is what a service runs now: service.replicas, 1 when not written.
func replicas(d *render.Document) int {
	if d.Has("service.replicas") {
		return d.Workload.Service.Replicas
	}
	return 1
}

// pauseService scales a service to 0, keeping its replicas in service.pausedReplicas.
func (t *text) pauseService(w found) (Change, func(*render.Document) bool, error) {
	n := replicas(w.doc)
	if n == 0 {
		reason := "runs 0 replicas"
		if w.doc.Has("service.pausedReplicas") {
			reason = "is already paused"
		}
		return Change{}, nil, &UnchangedError{Workload: w.Workload, Reason: reason}
	}
	entries := [][2]string{{"replicas", "0"}, {"pausedReplicas", strconv.Itoa(n)}}
	verify := func(d *render.Document) bool {
		return d.Workload != nil && replicas(d) == 0 && d.Workload.Service.PausedReplicas == n
	}
	svc, err := t.mapping(w, "service")
	if err != nil {
		return Change{}, nil, err
	}
	if svc == nil {
		sp, err := t.appendBlock(w.doc.Index, "service", entries)
		return modified(t, sp), verify, err
	}
	sps, err := t.setEntries(svc, "service", []string{"replicas", "port", "health_check"}, entries)
	return modified(t, sps...), verify, err
}

// resumeService gives a paused service back the replicas of service.pausedReplicas.
func (t *text) resumeService(w found) (Change, func(*render.Document) bool, error) {
	if !w.doc.Has("service.pausedReplicas") {
		if replicas(w.doc) == 0 {
			return Change{}, nil, t.refuse(w.doc.At("service.replicas").Line, "service.pausedReplicas",
				"%s was not paused by gpuctl pause (it has no service.pausedReplicas to resume to); scale it with gpuctl scale", w.ID())
		}
		return Change{}, nil, &UnchangedError{Workload: w.Workload, Reason: "is not paused"}
	}
	n := w.doc.Workload.Service.PausedReplicas
	verify := func(d *render.Document) bool {
		return d.Workload != nil && replicas(d) == n && !d.Has("service.pausedReplicas")
	}
	sps, err := t.unpause(w, strconv.Itoa(n))
	return modified(t, sps...), verify, err
}

// unpause sets service.replicas and removes service.pausedReplicas.
func (t *text) unpause(w found, replicas string) ([]splice, error) {
	svc, err := t.mapping(w, "service")
	if err != nil {
		return nil, err
	}
	if k, _ := entry(svc, "pausedReplicas"); k == nil {
		return nil, t.refuse(w.doc.At("service.pausedReplicas").Line, "service.pausedReplicas", "it comes from a merged mapping (<<)")
	}
	sps, err := t.setEntries(svc, "service", []string{"port"}, [][2]string{{"replicas", replicas}})
	if err != nil {
		return nil, err
	}
	k, _ := entry(svc, "pausedReplicas")
	rm, err := t.removeEntry(svc, "service", k.Value)
	return append(sps, rm), err
}
