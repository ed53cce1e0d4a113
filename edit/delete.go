package edit

import "strings"

// Delete removes the document that declares a workload: the whole file when it is the file's
// only document, else only that document's text (from its --- marker to the next), every
// byte of the other documents kept. It is refused when the repository would then have an
// error it does not have now (a kustomization that lists the file, ...).
func (r *Repo) Delete(ref JobRef) (*Result, error) {
	base, w, t, err := r.locate(ref)
	if err != nil {
		return nil, err
	}
	others := 0
	for i := range t.docs {
		if i != w.doc.Index && t.root(i) != nil {
			others++
		}
	}
	if others == 0 {
		return r.finish(base, "delete", w, t, Change{Path: w.File, Action: Deleted, Old: t.data}, nil)
	}
	k, err := t.docSegment(w.doc.Index)
	if err != nil {
		return nil, err
	}
	sp := splice{t.segs[k].start, t.segs[k].end, ""}
	if !t.segs[k].marker && k+1 < len(t.segs) {
		// The first document goes: the marker that separated it from the next goes too, when
		// it is a bare ---.
		next := t.segs[k+1]
		line := t.data[next.start:t.lineEnd(next.line)]
		if strings.TrimRight(string(line), "\r\n") == "---" {
			sp.end = t.lineEnd(next.line)
		}
	}
	return r.finish(base, "delete", w, t, modified(t, sp), nil)
}
