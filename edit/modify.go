package edit

import (
	"fmt"
	"path/filepath"

	"github.com/gpuctl/gpuctl/render"
	"go.yaml.in/yaml/v3"
)

// UnchangedError is an edit that would change nothing: the job is already in that state.
type UnchangedError struct {
	Workload
	Reason string
}

// Error says so.
func (e *UnchangedError) Error() string {
	return fmt.Sprintf("%s %s %s: nothing to change", e.Kind, e.ID(), e.Reason)
}

// locate renders the repository as it is, finds the workload that ref names and reads its
// file for editing.
func (r *Repo) locate(ref JobRef) (*render.Result, found, *text, error) {
	base, err := r.scan()
	if err != nil {
		return nil, found{}, nil, err
	}
	w, err := r.find(base, ref)
	if err != nil {
		return nil, found{}, nil, err
	}
	t, err := r.load(w)
	return base, w, t, err
}

// load reads the file of a workload for editing.
func (r *Repo) load(w found) (*text, error) {
	data, err := r.FS.ReadFile(filepath.Join(r.Root, filepath.FromSlash(w.File)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", w.File, err)
	}
	return parseText(w.File, data)
}

// mapping returns the value of a top-level block of a workload's document (job, service)
// as a mapping to edit; nil when the document does not write it. An alias, or a value that
// is not a mapping, cannot be edited.
func (t *text) mapping(w found, key string) (*yaml.Node, error) {
	root := t.root(w.doc.Index)
	if root == nil || root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: document %d of the file is not the workload %s", t.path, w.doc.Index, w.ID())
	}
	k, v := entry(root, key)
	switch {
	case k == nil:
		return nil, nil
	case v.Kind == yaml.AliasNode:
		return nil, t.refuse(v.Line, key, "it is an alias (*%s) of a block that other places share", v.Value)
	case v.Kind != yaml.MappingNode:
		return nil, t.refuse(v.Line, key, "it is not a mapping")
	}
	return v, t.notShared(key, root, v)
}

// setEntries sets entries (key, value) of mapping m: in place where m writes the key itself,
// else added after the first of the entries named in after (see insertEntries).
func (t *text) setEntries(m *yaml.Node, field string, after []string, entries [][2]string) ([]splice, error) {
	var out []splice
	var add [][2]string
	flow := m.Style&yaml.FlowStyle != 0
	for _, e := range entries {
		k, v := entry(m, e[0])
		if k == nil {
			add = append(add, e)
			continue
		}
		if err := t.notShared(field+"."+e[0], v); err != nil {
			return nil, err
		}
		sp, err := t.setValue(v, field+"."+e[0], e[1], flow)
		if err != nil {
			return nil, err
		}
		out = append(out, sp)
	}
	if len(add) > 0 {
		sp, err := t.insertEntries(m, field, after, add)
		if err != nil {
			return nil, err
		}
		out = append(out, sp)
	}
	return out, nil
}

// finish checks an edit of a workload's file: the document must read as verify wants once
// edited (nil: not checked), and the repository must render with no error that it did not
// have before.
func (r *Repo) finish(base *render.Result, verb string, w found, t *text, change Change, verify func(*render.Document) bool) (*Result, error) {
	if verify != nil {
		docs, _ := render.ParseFile(w.File, change.New)
		ok := false
		for _, d := range docs {
			if d.Index == w.doc.Index {
				ok = verify(d)
			}
		}
		if !ok {
			return nil, &CannotEditError{File: w.File, Line: w.doc.Pos.Line, Reason: "the edited file does not read as intended"}
		}
	}
	introduced, after, err := r.check(base, []Change{change}, nil)
	if err != nil {
		return nil, err
	}
	errs, warnings := split(introduced)
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s %s %s would make the repository invalid: %w", verb, w.Kind, w.ID(), render.NewValidationError(errs))
	}
	if err := r.review(base, after, []Change{change}); err != nil {
		return nil, fmt.Errorf("%s %s %s: %w", verb, w.Kind, w.ID(), err)
	}
	return &Result{Verb: verb, Workloads: []Workload{w.Workload}, Changes: []Change{change}, Warnings: warnings}, nil
}

// modified is the change of a workload's file by splices.
func modified(t *text, splices ...splice) Change {
	return Change{Path: t.path, Action: Modified, Old: t.data, New: t.apply(splices...)}
}
