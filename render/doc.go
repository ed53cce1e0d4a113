// Package render turns gpuctl files into Kubernetes objects: a pure function of the files,
// with the same input giving byte-identical output.
//
// A render reads every *.yaml and *.yml file below a path (dotfiles and dot-directories are
// skipped), parses each document strictly (unknown fields, wrong types, unknown kinds and
// versions are errors with file, line, column, field and a hint), validates the rules of the
// gpuctl format v0.1, applies the directory-to-namespace mapping of .gpuctl.yaml, renders
// each kind (training, inference, notebook, compute, pool, quota) and hands directories that
// hold a kustomization.yaml to kustomize with the gpuctl files already rendered. Every error
// of every file is reported at once, as a *ValidationError; warnings never fail. With
// Options.Hold (the daemon's renders), errors that all lie in tenant directories hold those
// namespaces instead: the render succeeds without their files and lists them in Result.Held.
//
// Directories that .gpuctl.yaml maps to a namespace are tenant directories, written by teams
// that may be hostile: their objects must stay in that namespace, be of the kinds of
// tenancy.kinds and pass the tenant pod policy (CheckPodPolicy, which other packages reuse on
// any object); they are marked with the tenant annotation, and each tenant namespace gets the
// identity that the reconciler applies it as.
//
// The filesystem is injected (sigs.k8s.io/kustomize/kyaml/filesys), so tests and the
// reconciler render from memory or from a fetched revision alike:
//
//	res, err := render.New(render.Options{}).Render(filesys.MakeFsOnDisk(), "examples")
//	if err != nil {
//		return err // a *ValidationError lists every problem; res.Diagnostics has them too
//	}
//	out, _ := render.MarshalYAML(res.Objects) // ready for kubectl apply -f -
//
// A Cache in Options.Cache keeps each file's parsed documents and rendered objects for the
// next render, which then parses and renders only the files that changed (the daemon keeps one).
//
// See docs/format.md for the format reference.
package render
