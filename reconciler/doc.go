// Package reconciler plans and applies rendered objects against a cluster: it pairs desired
// objects with live ones, decides one action for each (create, update, recreate, delete,
// unchanged, skipped), applies with server-side apply in stages, and prunes what left Git. It
// returns data — a Plan and a ChangeSet — that the CLI prints and the daemon records. Objects
// are named by object.Ref and field diffs are object.FieldDiff (package internal/object); in a
// plan's JSON each object is written with its group and version apart.
//
//	m, err := reconciler.NewManager(restConfig, reconciler.DefaultOptions())
//	plan, err := m.Plan(ctx, rendered)          // reads only: lists, a few gets, dry-runs for changes
//	fmt.Println(plan.Summary())                 // 3 to create, 1 to update, ...; GPUs: +8 in training-pool
//	changes, err := m.Apply(ctx, plan)          // staged server-side apply, then prune
//
// The no-op path decides locally: each applied object carries the hash of the configuration
// gpuctl applied (annotation g8s.host/applied-hash); an object whose hash matches and whose
// live fields still hold every desired value is unchanged without any request to the API
// server. Only objects that fail that test get a server-side dry-run, whose result gives the
// field-level diff (or reveals an immutable field, which makes the action a recreate).
//
// The inventory is a kubectl ApplySet: a parent ConfigMap in the gpuctl namespace and the
// label applyset.kubernetes.io/part-of on every member. Pruning deletes only members that
// carry gpuctl's ownership label and are not opted out with g8s.host/prune: disabled.
//
// Tenant objects (annotated g8s.host/tenant by the renderer) must be namespaced and in their
// tenant's namespace, and are written — after every admin object — as the tenant's
// ServiceAccount gpuctl-tenant (Options.ImpersonateTenants). A live object that gpuctl did not
// create is never taken over unless an admin annotated it g8s.host/adopt=true, and never
// force-applied. An object that cannot be planned fails alone (Change.Error, Plan.Failed):
// it and what depends on it are skipped, the rest is applied.
//
// A Job that Kueue admits (QueueManaged: labelled kueue.x-k8s.io/queue-name) shares fields with
// Kueue: the fields Kueue adds to its pod template are not gpuctl's, and its spec.suspend is
// applied, compared and corrected only while gpuctl's field manager owns it (kueue.go), so a
// sync never suspends an admitted Job again nor resumes a preempted one.
//
// A plan of a path below the repository root is scoped (Options.Scope): it prunes only members
// declared there (annotation g8s.host/source) and relabels only nodes of pools declared there.
// With Options.LimitedCredentials (the CLI's; a team member's kubeconfig) a plan whose
// inventory cannot be read is made without it — no prunes — and what the credentials may not
// read is skipped as not checked, with Plan.Notes saying so.
package reconciler
