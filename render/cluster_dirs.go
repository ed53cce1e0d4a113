package render

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/gpuctl/gpuctl/internal/keys"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// One repository serves several clusters (docs/fleet.md): clusters/<name>/ holds what only
// cluster <name> gets (its pools, its quotas, its jobs, its teams' directories), everything
// outside clusters/ is shared. A render for cluster NAME (Options.Cluster) reads the shared
// files and clusters/NAME/, and never lists the other clusters' directories; a render without
// a cluster reads none of clusters/, with a warning. A repository without clusters/ is
// rendered whole for any cluster (the daemon's --cluster names it in notifications too). Below clusters/NAME/ the namespace rules
// of .gpuctl.yaml match the path relative to clusters/NAME/, as if it were the root:
// clusters/a/teams/alice/x.yaml is in teams/alice/ for the rule teams/*/** -> $1.

// ClustersDir is the directory (at the repository root) of the per-cluster directories.
const ClustersDir = "clusters"

// CheckCluster checks a cluster name (Options.Cluster, --cluster) against the tree at root on
// fsys: a DNS label whose directory clusters/NAME exists, or any DNS label in a tree without
// clusters/ (one that every cluster gets whole). Its error is the one a render for the cluster
// gives (gpuctl validate --cluster), so that what writes for a cluster says the same.
func CheckCluster(fsys filesys.FileSystem, root, name string) error {
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return fmt.Errorf("cluster %q: not a valid cluster name (a DNS label): %s", name, strings.Join(errs, "; "))
	}
	if !fsys.IsDir(filepath.Join(root, ClustersDir)) {
		return nil // a repository of one cluster: every cluster gets all of it
	}
	if !fsys.IsDir(filepath.Join(root, ClustersDir, name)) {
		return fmt.Errorf("cluster %q: no directory %s/ (each cluster's files are in %s/<name>/ at the root of the repository, %s)",
			name, ClusterPath(name, "."), ClustersDir, root)
	}
	return nil
}

// SplitCluster splits dir (slash-separated, relative to the root) at the directory of the
// cluster that holds it: clusters/a/teams/alice is ("a", "teams/alice"), the path that the
// namespace rules match (below clusters/NAME/ as at the root), and clusters/a is ("a", ".").
// A shared directory, and clusters/ itself, are ("", dir). dir is read cleaned, as the
// namespace rules read it: ./clusters/a/ is clusters/a.
func SplitCluster(dir string) (cluster, inner string) {
	rest, ok := strings.CutPrefix(path.Clean(dir), ClustersDir+"/")
	if !ok || rest == "" {
		return "", dir
	}
	cluster, inner, _ = strings.Cut(rest, "/")
	if inner == "" {
		inner = "."
	}
	return cluster, inner
}

// ClusterPath is rel, a path relative to the directory of cluster, relative to the root:
// clusters/<cluster>/<rel>.
func ClusterPath(cluster, rel string) string {
	return path.Join(ClustersDir, cluster, rel)
}

// clusterScope checks Options.Cluster against the tree (CheckCluster) and sets the run's
// cluster. A render of a directory below clusters/X/ is a render for X (for its namespace
// rules); with another cluster it is an error.
func (st *run) clusterScope(name string) error {
	if name != "" {
		if err := CheckCluster(st.fsys, st.repo, name); err != nil {
			return err
		}
		if !st.fsys.IsDir(filepath.Join(st.repo, ClustersDir)) {
			return nil // a repository of one cluster: every cluster gets all of it
		}
	}
	st.cluster = name
	if of, _ := SplitCluster(filepath.ToSlash(relTo(st.repo, st.argAbs))); of != "" {
		switch {
		case name == "":
			st.cluster = of
		case of != name:
			return fmt.Errorf("%s is in the directory of cluster %q, not of cluster %q", st.argDir, of, name)
		}
	}
	return nil
}

// skipClusterDir reports whether the walk leaves out the directory at rel (slash-separated,
// relative to the root): clusters/ without a cluster (with a warning naming display), and
// the directory of every other cluster.
func (st *run) skipClusterDir(rel, display string) bool {
	if rel == ClustersDir && st.cluster == "" {
		st.ds.warnf(display, Pos{}, "", "%s/ is not rendered: it holds the files of each cluster, and this render is for none (give the cluster, --cluster NAME)", ClustersDir)
		return true
	}
	dir, name := path.Split(rel)
	return dir == ClustersDir+"/" && name != st.cluster
}

// clusterFileProblem is the error on a file (rel: slash-separated, relative to the root) that
// a render for a cluster does not read: a file directly in clusters/, which belongs to no
// cluster, and a .gpuctl.yaml in the cluster's directory (one configuration serves every
// cluster). "" when rel is neither.
func (st *run) clusterFileProblem(rel string) string {
	if st.cluster == "" {
		return ""
	}
	switch dir, name := path.Split(rel); {
	case dir == ClustersDir+"/" && isSourceFile(name):
		return fmt.Sprintf("a file directly in %s/ belongs to no cluster and is not read: move it to %s/<name>/ (one cluster) or out of %s/ (every cluster)", ClustersDir, ClustersDir, ClustersDir)
	case dir == ClustersDir+"/"+st.cluster+"/" && name == keys.ConfigFile:
		return fmt.Sprintf("%s is not read in a cluster's directory: the one at the root configures every cluster", keys.ConfigFile)
	}
	return ""
}

// clusterRel splits rel (slash-separated, relative to the root) into its path relative to
// the directory of the run's cluster and that directory's prefix ("clusters/NAME/"); a path
// outside it is returned whole, with no prefix. Namespace rules match the inner path.
func (st *run) clusterRel(rel string) (inner, prefix string) {
	if of, in := SplitCluster(rel); st.cluster != "" && of == st.cluster {
		return in, ClusterPath(of, ".") + "/"
	}
	return rel, ""
}

// inClustersDir reports whether rel (slash-separated, relative to a directory holding a
// .gpuctl.yaml) lies in that directory's clusters/: a directory there is configured by the
// .gpuctl.yaml above clusters/, with its namespace rules matched below clusters/NAME/, never by
// one of its own (outerConfig).
func inClustersDir(rel string) bool {
	return rel == ClustersDir || strings.HasPrefix(rel, ClustersDir+"/")
}
