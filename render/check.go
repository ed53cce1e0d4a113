package render

import (
	"path"

	"github.com/gpuctl/gpuctl/internal/keys"
)

// poolNodeRef remembers where a node was first put in a pool.
type poolNodeRef struct {
	pool string
	doc  *Document
}

// validateAll checks every document and the rules that span files: namespaces, pools, quotas.
func (st *run) validateAll() {
	nodes := map[string]poolNodeRef{}
	poolDocs := map[string]*Document{}
	users := map[string]*Document{}
	tc := st.newTenancyCheck()
	for _, s := range st.sources {
		mapped, isMapped := st.namespaceFor(path.Dir(s.rel))
		if isMapped {
			st.checkTenantNamespace(s, mapped)
		}
		for i, doc := range s.docs {
			v := &validator{doc: doc, ds: st.ds, cfg: st.cfg}
			switch {
			case doc.Workload != nil:
				st.validateWorkload(s, i, mapped, isMapped)
			case doc.Pool != nil:
				st.teamDirForbidden(v, s, isMapped)
				v.pool(doc.Pool)
				st.checkPoolNodes(doc, poolDocs, nodes)
			case doc.Quota != nil:
				st.teamDirForbidden(v, s, isMapped)
				v.quota(doc.Quota)
				for _, u := range doc.Quota.Users {
					if first, dup := users[u.Name]; dup {
						st.ds.errorf(doc.File, doc.At("users."+u.Name), "users."+u.Name,
							"user %q already has a quota in %s:%d", u.Name, first.File, first.At("users."+u.Name).Line)
						continue
					}
					users[u.Name] = doc
				}
			case doc.Manifest != nil:
				st.checkManifest(tc, doc, s, mapped, isMapped)
			}
		}
	}
	st.teams = users
	st.checkPoolReferences(poolDocs)
	st.checkQuotaPools(poolDocs)
	st.checkQueued()
}

// validateWorkload checks workload document i of s and sets its namespace. Both are a function
// of the file and the configuration alone: they are kept in the render cache with the file's
// entry, and a file whose entry holds them is not checked again.
func (st *run) validateWorkload(s *source, i int, mapped string, isMapped bool) {
	doc := s.docs[i]
	if s.entry != nil {
		if diags, ns, ok := st.cache.validated(s.entry, i); ok {
			for j := range diags {
				d := diags[j]
				st.ds.add(&d)
			}
			doc.Namespace = ns
			return
		}
	}
	ds := &diagnostics{}
	v := &validator{doc: doc, ds: ds, cfg: st.cfg}
	v.workload(doc.Workload)
	doc.Namespace = st.workloadNamespace(v, s, mapped, isMapped)
	st.ds.list = append(st.ds.list, ds.list...)
	if s.entry != nil {
		st.cache.rememberValidated(s.entry, i, ds.list, doc.Namespace)
	}
}

func (st *run) workloadNamespace(v *validator, s *source, mapped string, isMapped bool) string {
	w := v.doc.Workload
	if !isMapped {
		if w.Job.Namespace != "" {
			return w.Job.Namespace
		}
		return keys.DefaultNamespace
	}
	if w.Job.Namespace != "" && w.Job.Namespace != mapped {
		v.errorf("job.namespace", "files in %s/ belong to namespace %q and cannot place jobs in %q", path.Dir(s.rel), mapped, w.Job.Namespace).Hint =
			"remove job.namespace, or move the file to that team's directory"
	}
	if w.Job.Priority == "high" && !st.cfg.highPriorityAllowed(mapped) {
		v.errorf("job.priority", "pod policy %s: priority high (%s) is not allowed in namespace %q", RulePriorityClass, keys.PriorityClassHigh, mapped).Hint =
			"tenancy.highPriorityNamespaces in " + keys.ConfigFile + " lists the namespaces that may use it"
	}
	return mapped
}

func (st *run) teamDirForbidden(v *validator, s *source, isMapped bool) {
	if isMapped {
		v.errorf("kind", "%s documents are cluster-wide and cannot live in a team directory (%s/)", v.doc.Kind, path.Dir(s.rel)).Hint =
			"move the file out of the directories mapped to namespaces"
	}
}

// checkPoolNodes reports pools declared twice and nodes that are in two pools.
func (st *run) checkPoolNodes(doc *Document, poolDocs map[string]*Document, nodes map[string]poolNodeRef) {
	p := doc.Pool
	if first, dup := poolDocs[p.Name]; dup && p.Name != "" {
		st.ds.errorf(doc.File, doc.At("metadata.name"), "metadata.name", "pool %q is already declared in %s:%d",
			p.Name, first.File, first.At("metadata.name").Line)
		return
	}
	poolDocs[p.Name] = doc
	for _, n := range p.Nodes {
		field := "nodes." + n.Name
		if first, dup := nodes[n.Name]; dup {
			st.ds.errorf(doc.File, doc.At(field), field, "node %q is already in pool %q (%s:%d); a node belongs to one pool",
				n.Name, first.pool, first.doc.File, first.doc.At(field).Line)
			continue
		}
		nodes[n.Name] = poolNodeRef{pool: p.Name, doc: doc}
	}
}

// checkPoolReferences warns about workloads asking for a pool or GPU type that no pool file of
// the tree provides (only when the tree declares pools at all).
func (st *run) checkPoolReferences(pools map[string]*Document) {
	if len(pools) == 0 {
		return
	}
	for _, s := range st.sources {
		for _, doc := range s.docs {
			w := doc.Workload
			if w == nil || w.Resources.Pool == "" || w.Resources.Pool == keys.DefaultPool {
				continue
			}
			pd, ok := pools[w.Resources.Pool]
			if !ok {
				st.ds.warnf(doc.File, doc.At("resources.pool"), "resources.pool", "no pool file in this tree declares pool %q", w.Resources.Pool)
				continue
			}
			if w.Resources.GPUType != "" && !poolHasType(pd.Pool, NormalizeGPUType(w.Resources.GPUType)) {
				st.ds.warnf(doc.File, doc.At("resources.gpu-type"), "resources.gpu-type",
					"no node of pool %q declares gpu-type %q (%s:%d); the job may never be scheduled",
					w.Resources.Pool, NormalizeGPUType(w.Resources.GPUType), pd.File, pd.Pos.Line)
			}
		}
	}
}

func poolHasType(p *Pool, t string) bool {
	for _, n := range p.Nodes {
		if n.GPUType == "" || NormalizeGPUType(n.GPUType) == t {
			return true // an undeclared type may be published by the node labeler
		}
	}
	return false
}

// checkManifest checks the names and ApplySet keys of a plain manifest, and holds one of a
// tenant directory to its namespace and the tenant rules.
func (st *run) checkManifest(tc *tenancyCheck, doc *Document, s *source, mapped string, isMapped bool) {
	if field, problem := nameProblem(doc.Manifest); problem != "" {
		st.ds.errorf(doc.File, tc.fieldPos(s, doc, field), field, "%s", problem)
		return
	}
	if st.checkApplySetKeys(tc, doc, s) || !isMapped {
		return
	}
	meta, _ := doc.Manifest["metadata"].(map[string]any)
	switch ns, _ := meta["namespace"].(string); ns {
	case "":
		meta["namespace"] = mapped
	case mapped:
	default:
		st.ds.errorf(doc.File, tc.fieldPos(s, doc, "metadata.namespace"), "metadata.namespace",
			"files in %s/ belong to namespace %q and cannot place objects in %q", path.Dir(s.rel), mapped, ns)
		return
	}
	doc.Namespace = mapped
	tc.tenantManifest(doc, s, mapped)
}

// checkNamespaces holds objects that kustomize built in a tenant directory to the tenant
// rules (checkKustomizeOutput); other directories' output is the admin's and is not checked.
func (st *run) checkNamespaces(file, relDir string, objs []map[string]any) {
	if mapped, ok := st.namespaceFor(relDir); ok {
		st.checkKustomizeOutput(file, relDir, mapped, objs)
	}
}
