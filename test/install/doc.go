// Package install checks the ways a user installs gpuctl, by doing them: `go install
// github.com/gpuctl/gpuctl/cmd/gpuctl@VERSION` from a module proxy on disk that serves this
// working tree as that version (the binary reports the version), the binary installed as the
// kubectl plugin kubectl-gpuctl (run directly with the argv kubectl gives it, and through the
// real kubectl when the local cluster's cache has it), the release workflow example
// (.github/workflows/release.yaml) being well-formed and complete, and deploy/images naming the
// images that `make image` builds (hack/image/images.env). The server-side dry-run of deploy/
// and the run of its git-source example are in test/e2e, which has the cluster.
package install
