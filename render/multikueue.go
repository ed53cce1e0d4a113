package render

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gpuctl/gpuctl/internal/keys"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
)

// With multiKueue in the configuration (Config.MultiKueue) and queueing kueue, the render for
// the manager cluster (Options.Cluster) gives every team's ClusterQueue Kueue's MultiKueue
// admission check: a job committed there is admitted by the manager and runs in whichever
// worker cluster admits it first. Kueue does the dispatching; gpuctl renders its objects:
// one AdmissionCheck, one MultiKueueConfig listing the workers, one MultiKueueCluster per
// worker pointing at the admin's Secret that holds its kubeconfig. The workers' own renders
// are plain queueing kueue (their teams' ClusterQueues and LocalQueues of the same names).
// docs/fleet.md describes the layout.

// MultiKueue is the configuration's multiKueue: the manager cluster and its workers.
type MultiKueue struct {
	// Manager is the cluster (a name of Options.Cluster, --cluster) whose render gets the
	// MultiKueue objects and the admission check on every team's ClusterQueue.
	Manager string `gpuctl:"manager,required"`
	// Workers are the clusters that run the manager's jobs (at most multiKueueMaxWorkers).
	Workers []MultiKueueWorker `gpuctl:"workers,required"`
}

// MultiKueueWorker is one worker cluster: its name (the MultiKueueCluster's, and the name the
// read verbs show in CLUSTER) and the Secret in Kueue's namespace of the manager whose key
// "kubeconfig" reaches it (default multikueue-<name>). The admin creates the Secret; it is never
// in Git.
type MultiKueueWorker struct {
	Name             string `gpuctl:"name,required"`
	KubeconfigSecret string `gpuctl:"kubeconfigSecret"`
}

// Names of the MultiKueue objects gpuctl renders, and Kueue's controller of the check.
const (
	// MultiKueueCheck is the AdmissionCheck on every team's ClusterQueue of the manager.
	MultiKueueCheck = "gpuctl-multikueue"
	// multiKueueConfigName is the MultiKueueConfig the check's parameters name.
	multiKueueConfigName = "gpuctl"
	// multiKueueController is Kueue's MultiKueue admission check controller.
	multiKueueController = keys.KueueGroup + "/multikueue"
	// multiKueueMaxWorkers is what a MultiKueueConfig may list (its CRD's maxItems).
	multiKueueMaxWorkers = 10
)

// Secret is the name of the worker's kubeconfig Secret.
func (w MultiKueueWorker) Secret() string {
	if w.KubeconfigSecret != "" {
		return w.KubeconfigSecret
	}
	return "multikueue-" + w.Name
}

// IsManager reports whether cluster is the MultiKueue manager of the configuration.
func (c *Config) IsManager(cluster string) bool {
	return c != nil && c.MultiKueue.Manager != "" && cluster == c.MultiKueue.Manager
}

// IsWorker reports whether cluster is one of the configuration's MultiKueue workers.
func (c *Config) IsWorker(cluster string) bool {
	if c == nil || cluster == "" {
		return false
	}
	for _, w := range c.MultiKueue.Workers {
		if w.Name == cluster {
			return true
		}
	}
	return false
}

// checkMultiKueue validates multiKueue: it needs queueing kueue, cluster names are DNS labels,
// the manager is no worker, the workers are distinct and at most multiKueueMaxWorkers, and each
// Secret name is valid.
func (c *Config) checkMultiKueue(name string, pos map[string]Pos, ds *diagnostics) {
	mk := c.MultiKueue
	if mk.Manager == "" && len(mk.Workers) == 0 {
		return
	}
	if !c.Kueue() {
		ds.errorf(name, pos["multiKueue"], "multiKueue", "multiKueue needs queueing %s: MultiKueue is Kueue's", QueueingKueue).Hint =
			"add queueing: " + QueueingKueue
	}
	if errs := validation.IsDNS1123Label(mk.Manager); mk.Manager != "" && len(errs) > 0 {
		ds.errorf(name, pos["multiKueue.manager"], "multiKueue.manager", "cluster name %q: %s", mk.Manager, errs[0])
	}
	if len(mk.Workers) > multiKueueMaxWorkers {
		ds.errorf(name, pos["multiKueue.workers"], "multiKueue.workers", "%d workers; Kueue's MultiKueueConfig lists at most %d",
			len(mk.Workers), multiKueueMaxWorkers)
	}
	seen := map[string]bool{}
	for i, w := range mk.Workers {
		f := "multiKueue.workers[" + strconv.Itoa(i) + "]"
		switch errs := validation.IsDNS1123Label(w.Name); {
		case w.Name == "":
			continue // required, reported by the decoder
		case len(errs) > 0:
			ds.errorf(name, pos[f+".name"], f+".name", "cluster name %q: %s", w.Name, errs[0])
		case w.Name == mk.Manager:
			ds.errorf(name, pos[f+".name"], f+".name", "cluster %q is the manager; a manager runs no job of its own under MultiKueue", w.Name)
		case seen[w.Name]:
			ds.errorf(name, pos[f+".name"], f+".name", "cluster %q is listed twice", w.Name)
		}
		seen[w.Name] = true
		if errs := validation.IsDNS1123Subdomain(w.Secret()); len(errs) > 0 {
			ds.errorf(name, pos[f+".kubeconfigSecret"], f+".kubeconfigSecret", "Secret name %q: %s", w.Secret(), errs[0])
		}
	}
}

// multiKueueObjects renders, for the manager cluster, the AdmissionCheck, the MultiKueueConfig
// and a MultiKueueCluster per worker; nothing for another cluster, or without teams.
func (st *run) multiKueueObjects(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	if !st.multiKueueManager() {
		return objs
	}
	configFile := st.displayOf(filepath.Join(st.repo, keys.ConfigFile))
	mk := st.cfg.MultiKueue
	workers := make([]any, 0, len(mk.Workers))
	for _, w := range mk.Workers {
		workers = append(workers, w.Name)
		cluster := kueueObject("MultiKueueCluster", "", w.Name, keys.ConfigFile, nil, map[string]any{"spec": map[string]any{
			"clusterSource": map[string]any{"kubeConfig": map[string]any{"locationType": "Secret", "location": w.Secret()}},
		}})
		objs = st.add(objs, cluster, configFile, Pos{})
	}
	config := kueueObject("MultiKueueConfig", "", multiKueueConfigName, keys.ConfigFile, nil,
		map[string]any{"spec": map[string]any{"clusters": workers}})
	check := kueueObject("AdmissionCheck", "", MultiKueueCheck, keys.ConfigFile, nil, map[string]any{"spec": map[string]any{
		"controllerName": multiKueueController,
		"parameters":     map[string]any{"apiGroup": keys.KueueGroup, "kind": "MultiKueueConfig", "name": multiKueueConfigName},
	}})
	objs = st.add(objs, config, configFile, Pos{})
	return st.add(objs, check, configFile, Pos{})
}

// multiKueueManager reports whether this render is the MultiKueue manager's, with teams.
func (st *run) multiKueueManager() bool {
	return st.cfg.Kueue() && st.cfg.IsManager(st.cluster) && len(st.teams) > 0
}

// withMultiKueueCheck puts the MultiKueue admission check on a ClusterQueue of the manager.
func withMultiKueueCheck(cq *unstructured.Unstructured) error {
	rule := map[string]any{"admissionChecks": []any{map[string]any{"name": MultiKueueCheck}}}
	if err := unstructured.SetNestedField(cq.Object, rule, "spec", "admissionChecksStrategy"); err != nil {
		return fmt.Errorf("ClusterQueue %s: %w", cq.GetName(), err)
	}
	return nil
}

// warnUndispatched warns of each Deployment, StatefulSet or Pod in a team namespace of the
// manager: MultiKueue does not dispatch them (the manager's Kueue integrates batch/job, and
// jobset.x-k8s.io/jobset where the admin adds it; deploy/kueue/multikueue_manager_config.yaml),
// so they run in the manager itself, which has no GPUs for them. They belong in the directory
// of the worker that runs them.
func (st *run) warnUndispatched(objs []*unstructured.Unstructured) {
	if !st.multiKueueManager() {
		return
	}
	for _, o := range objs {
		kind, ns := o.GetKind(), o.GetNamespace()
		if st.teams[ns] == nil || (kind != "Deployment" && kind != "StatefulSet" && kind != "Pod") {
			continue
		}
		file, p := st.origin(o)
		st.ds.warnf(file, p, "", "%s %s/%s is not dispatched by MultiKueue: cluster %q is its manager, which sends Jobs only to the workers (%s); "+
			"it would run in %s itself: commit it to %s/<worker>/", kind, ns, o.GetName(), st.cluster, workerNames(st.cfg.MultiKueue), st.cluster, ClustersDir)
	}
}

// workerNames lists the workers' names, comma-separated.
func workerNames(mk MultiKueue) string {
	names := make([]string, len(mk.Workers))
	for i, w := range mk.Workers {
		names[i] = w.Name
	}
	return strings.Join(names, ", ")
}
