package review

import (
	"errors"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/render"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// vroot is where a revision's files sit in the in-memory filesystem that renders them.
const vroot = "/repo"

// Rendered is what one revision renders to.
type Rendered struct {
	// Objects are the rendered objects. When files had errors, they are the objects of the
	// other files (see Excluded); when that failed too, there are none.
	Objects []*unstructured.Unstructured
	// Documents are the parsed documents of every file, valid or not.
	Documents []*render.Document
	// Diagnostics are the errors and warnings of the full render, with repository-relative
	// file names.
	Diagnostics []*render.Diagnostic
	// Excluded lists the files whose errors kept them out of Objects.
	Excluded []string
	// Failed is true when no objects could be rendered at all.
	Failed bool
	// root is the directory, relative to the repository root, that the objects' source
	// annotations are relative to (the .gpuctl.yaml directory, or the rendered one).
	root string
}

// Errors returns the error diagnostics.
func (r *Rendered) Errors() []*render.Diagnostic {
	var out []*render.Diagnostic
	for _, d := range r.Diagnostics {
		if d.Severity == render.SeverityError {
			out = append(out, d)
		}
	}
	return out
}

// renderRevision renders the files of rev below under. Files with errors are left out and
// the rest rendered again, so that one broken file does not hide the other changes. With a
// cluster, the revision is rendered for it (clusterFiles).
func renderRevision(rev *Revision, under, cluster string) (*Rendered, error) {
	files, cluster := clusterFiles(rev.Files, cluster)
	res, err := renderFiles(files, under, cluster)
	if err == nil || res == nil {
		return res, err
	}
	bad := map[string]bool{}
	for _, d := range res.Errors() {
		bad[d.File] = true
	}
	rest := make(map[string]string, len(files))
	for p, c := range files {
		if !bad[p] {
			rest[p] = c
		}
	}
	if bad[""] || bad[path.Join(path.Clean(under), keys.ConfigFile)] || len(rest) == len(files) {
		res.Failed = true
		return res, nil
	}
	again, err2 := renderFiles(rest, under, cluster)
	if err2 != nil || again == nil {
		res.Failed = true
		return res, nil
	}
	res.Objects, res.root = again.Objects, again.root
	for f := range bad {
		res.Excluded = append(res.Excluded, f)
	}
	sort.Strings(res.Excluded)
	return res, nil
}

// renderFiles renders files (repository-relative) from memory. A *render.ValidationError is
// returned with the result; other errors without.
func renderFiles(files map[string]string, under, cluster string) (*Rendered, error) {
	fsys, err := render.MemFS(vroot, files)
	if err != nil {
		return nil, err
	}
	target := path.Join(vroot, path.Clean(under))
	if !fsys.Exists(target) {
		return &Rendered{}, nil // nothing below the path at this revision
	}
	res, err := render.New(render.Options{Cluster: cluster}).Render(fsys, target)
	var ve *render.ValidationError
	if err != nil && !errors.As(err, &ve) {
		return nil, err
	}
	out := &Rendered{Objects: res.Objects, Documents: res.Documents, root: relFile(res.Root)}
	for _, d := range res.Diagnostics {
		c := *d
		c.File = relFile(c.File)
		out.Diagnostics = append(out.Diagnostics, &c)
	}
	for _, d := range res.Documents {
		d.File = relFile(d.File)
	}
	return out, err
}

// relFile turns a path in the in-memory filesystem into a repository-relative one.
func relFile(p string) string {
	p = filepath.ToSlash(p)
	if rel, ok := strings.CutPrefix(p, vroot+"/"); ok {
		return rel
	}
	if p == vroot {
		return "."
	}
	return p
}

// clusterFiles are the files of a revision to render for cluster, and the cluster to render
// them for: all of them for it when the revision has its directory (clusters/<cluster>/) or
// no clusters/ at all (a repository of one cluster); the shared files alone, for no cluster,
// when it has other clusters but not this one (a cluster that a change adds has nothing in
// its base but what every cluster gets).
func clusterFiles(files map[string]string, cluster string) (map[string]string, string) {
	if cluster == "" || hasCluster(files, cluster) {
		return files, cluster
	}
	dir := render.ClustersDir + "/"
	shared := make(map[string]string, len(files))
	for p, c := range files {
		if !strings.HasPrefix(p, dir) {
			shared[p] = c
		}
	}
	return shared, ""
}

// hasCluster reports whether files (repository-relative) give cluster its files: they hold
// clusters/<cluster>/, or no clusters/ at all (a repository of one cluster, whole for any).
func hasCluster(files map[string]string, cluster string) bool {
	dir := render.ClustersDir + "/"
	layout := false
	for p := range files {
		if strings.HasPrefix(p, dir+cluster+"/") {
			return true
		}
		layout = layout || strings.HasPrefix(p, dir)
	}
	return !layout
}
