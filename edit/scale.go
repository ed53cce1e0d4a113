package edit

import (
	"fmt"
	"strconv"

	"github.com/gpuctl/gpuctl/render"
)

// Scale sets service.replicas of an inference, compute or notebook service of that kind (of
// any of them when kind is ""). Scaling a paused service to 1 or more resumes it
// (service.pausedReplicas is removed); scaling it to 0 changes nothing.
func (r *Repo) Scale(kind string, ref JobRef, n int) (*Result, error) {
	switch {
	case kind != "" && !scalable(kind):
		return nil, fmt.Errorf("cannot scale %q: only inference, compute and notebook services have replicas", kind)
	case n < 0:
		return nil, fmt.Errorf("--replicas %d: must be 0 or more", n)
	}
	base, w, t, err := r.locate(ref)
	if err != nil {
		return nil, err
	}
	switch {
	case kind == "" && !scalable(w.Kind):
		return nil, fmt.Errorf("cannot scale %s job %s (%s): only inference, compute and notebook services have replicas", w.Kind, w.ID(), w.File)
	case kind != "" && w.Kind != kind:
		return nil, fmt.Errorf("job %s is of kind %s, not %s (%s)", w.ID(), w.Kind, kind, w.File)
	}
	paused := w.doc.Has("service.pausedReplicas")
	if replicas(w.doc) == n {
		return nil, &UnchangedError{Workload: w.Workload, Reason: "already has " + strconv.Itoa(n) + " replicas"}
	}
	verify := func(d *render.Document) bool {
		return d.Workload != nil && replicas(d) == n && !d.Has("service.pausedReplicas")
	}
	var sps []splice
	if paused {
		sps, err = t.unpause(w, strconv.Itoa(n))
	} else {
		svc, merr := t.mapping(w, "service")
		switch {
		case merr != nil:
			err = merr
		case svc == nil:
			var sp splice
			sp, err = t.appendBlock(w.doc.Index, "service", [][2]string{{"replicas", strconv.Itoa(n)}})
			sps = []splice{sp}
		default:
			sps, err = t.setEntries(svc, "service", []string{"port", "health_check"}, [][2]string{{"replicas", strconv.Itoa(n)}})
		}
	}
	if err != nil {
		return nil, err
	}
	res, err := r.finish(base, "scale", w, t, modified(t, sps...), verify)
	if res != nil {
		res.Replicas = n
	}
	return res, err
}

// scalable reports whether workloads of a kind have replicas.
func scalable(kind string) bool {
	return kind == render.KindInference || kind == render.KindCompute || kind == render.KindNotebook
}
