// Package edit changes a repository of gpuctl files as a person would: it adds files
// (create), removes the document of a workload (delete), pauses and resumes a workload
// (job.suspend, service.replicas and service.pausedReplicas) and scales a service. It is the
// one place that writes gpuctl files, for the CLI's write verbs (`gpuctl create -f`,
// `gpuctl delete job`, `pause`, `resume`, `scale`, which commit the result with Git) and for
// the daemon's API.
//
// It uses no Git and no network. Each edit reads the tree from a filesystem (on disk or in
// memory), and returns the changes as data, a Result holding the new content of each file;
// nothing is written until Apply. An edit keeps the file as written: yaml.v3's node tree only
// says where a value is, and the edit splices bytes into the text, so comments, key order,
// quoting, anchors, flow style, indentation and line endings of every untouched line stay
// byte for byte. Before it returns, an edit renders the repository with the change made (in
// memory) and refuses one that brings an error the repository did not have, reported with
// file, line and field as `gpuctl validate` reports it.
//
//	repo, err := edit.Open(filesys.MakeFsOnDisk(), "/src/gitops") // reads .gpuctl.yaml
//	if err != nil {
//		return err
//	}
//	res, err := repo.Pause(edit.ParseJobRef("alice.sft", ""))
//	if err != nil {
//		return err // *UnchangedError, *NotFoundError, *AmbiguousError, *CannotEditError, ...
//	}
//	return edit.Apply(repo.FS, repo.Root, res.Changes)
package edit
