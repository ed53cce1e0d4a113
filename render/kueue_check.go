package render

import (
	"sort"
	"strings"

	"github.com/gpuctl/gpuctl/internal/keys"
)

// The checks of quota documents and workloads that depend on Config.Queueing.

// kueueQuota requires a team's cpu, memory and gpu with queueing kueue: Kueue admits a
// workload only when a quota covers every resource it asks for. Each may be written at the
// team's level or in every entry of pools (unlisted pools get 0 anyway).
func (v *validator) kueueQuota(u UserQuota, field string) {
	var missing []string
	for _, r := range quotaResources {
		if v.doc.Has(field + "." + r.field) {
			continue
		}
		covered := v.doc.Has(field+".pools") && len(u.Pools) > 0
		for _, p := range u.Pools {
			covered = covered && v.doc.Has(field+".pools."+p.Name+"."+r.field)
		}
		if !covered {
			missing = append(missing, r.field)
		}
	}
	if len(missing) > 0 {
		v.errorf(field, "with queueing %s, set %s (here, or in every entry of pools): Kueue admits only what a quota covers",
			QueueingKueue, strings.Join(missing, ", ")).Hint = "write 0 for none, e.g. gpu: 0"
	}
}

// resourceQuotaOnly holds a team to what a ResourceQuota can say: at least one of cpu,
// memory and gpu; per-pool quotas and borrowing and lending limits are ignored, with a warning.
func (v *validator) resourceQuotaOnly(field string) {
	if !v.doc.Has(field+".cpu") && !v.doc.Has(field+".memory") && !v.doc.Has(field+".gpu") {
		v.errorf(field, "set at least one of cpu, memory, gpu")
	}
	for _, f := range []string{"borrowingLimit", "lendingLimit", "pools"} {
		if v.doc.Has(field + "." + f) {
			v.warnf(field+"."+f, "ignored: queueing is %s; per-pool quotas, borrowing and lending need queueing: %s in %s",
				QueueingResourceQuota, QueueingKueue, keys.ConfigFile)
		}
	}
}

// checkQuotaPools refuses a quota entry of a pool that no pool document of the tree
// declares (keys.DefaultPool, the nodes in no pool, is always there).
func (st *run) checkQuotaPools(pools map[string]*Document) {
	known := make([]string, 0, len(pools)+1)
	for name := range pools {
		known = append(known, name)
	}
	sort.Strings(known)
	known = append(known, keys.DefaultPool)
	for _, s := range st.sources {
		for _, doc := range s.docs {
			if doc.Quota == nil {
				continue
			}
			for _, u := range doc.Quota.Users {
				for _, p := range u.Pools {
					if _, ok := pools[p.Name]; ok || p.Name == keys.DefaultPool {
						continue
					}
					field := "users." + u.Name + ".pools." + p.Name
					d := st.ds.errorf(doc.File, doc.At(field), field, "no pool document in this tree declares pool %q", p.Name)
					d.Hint = "expected one of " + strings.Join(known, ", ")
					if best := suggest(p.Name, known); best != "" {
						d.Hint = "did you mean \"" + best + "\"?"
					}
				}
			}
		}
	}
}

// queued reports whether a workload document goes to its team's Kueue queue: with queueing
// kueue, in a namespace that a quota document gives to a team.
func (st *run) queued(doc *Document) bool {
	return doc.Workload != nil && st.cfg.Kueue() && st.teams[doc.Namespace] != nil
}

// checkQueued warns, with queueing kueue, about the workloads that Kueue will not hold: one
// in a namespace without a team (no queue, no quota), and a GPU share that no ClusterQueue
// covers (Kueue would never admit it).
func (st *run) checkQueued() {
	if !st.cfg.Kueue() {
		return
	}
	for _, s := range st.sources {
		for _, doc := range s.docs {
			w := doc.Workload
			switch {
			case w == nil:
			case !st.queued(doc):
				st.ds.warnf(doc.File, doc.At("job.namespace"), "job.namespace",
					"not queued: namespace %q has no team (no user of a kind: quota document), so Kueue neither queues the job nor counts it against a quota",
					doc.Namespace).Hint = "give the namespace a quota, or move the file to a team's directory"
			case w.Resources.GPU == 0 && doc.Has("resources.gpu-share") && w.Resources.GPUShare.Sign() > 0:
				st.ds.warnf(doc.File, doc.At("resources.gpu-share"), "resources.gpu-share",
					"Kueue admits only what the team's ClusterQueue covers (cpu, memory, %s), not %s: the job would wait forever",
					keys.ResourceGPU, keys.ResourceGPUMem).Hint = "ask for a whole GPU (resources.gpu), or have Kueue ignore " + keys.ResourceGPUMem + " (excludeResourcePrefixes in its configuration)"
			}
		}
	}
}
