// Package object holds what every layer says about Kubernetes objects, once: the reference
// that names an object (Ref: its string form, its key across API versions, its order), the
// leaf fields that differ between two objects (FieldDiff, DiffFields, Contains), the GPUs an
// object requests (GPUs: pods × Kubernetes' effective request of one pod), and how an object
// and a field value print for people (ForDisplay, Display, with None for a missing value): a
// Secret's values never, only Masked ("***", and "*** (before)" / "*** (after)" where a diff
// changes them: ForDisplayPair, DiffFields).
//
// It is pure — no cluster, no I/O — and imports nothing of gpuctl but internal/keys, so the
// renderer, the engine, the review, the drift report and the CLI all use it:
//
//	ref := object.RefOf(u)                     // {APIVersion: "apps/v1", Kind: "Deployment", ...}
//	fmt.Println(ref)                           // Deployment team-a/web
//	for _, d := range object.DiffFields(before.Object, after.Object) {
//		fmt.Printf("%s: %s → %s\n", d.Path, object.Display(d.Old), object.Display(d.New))
//	}
//	gpus := object.GPUs(u)                     // replicas × nvidia.com/gpu per pod
package object
