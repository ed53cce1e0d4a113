// Command image builds gpuctl's container images without a container engine: `make image`.
//
//	go run ./hack/image --version VERSION [--platforms linux/amd64,linux/arm64] [--images gpuctl,...]
//
// It builds each binary with go build as the Makefile does (-trimpath, the version stamped
// with -ldflags -X), puts it on a base layer and writes, under bin/images/:
//
//   - NAME/: an OCI image layout whose index.json holds one image index tagged VERSION, with
//     one image per platform (copy both to a registry with `skopeo copy --all
//     oci:bin/images/NAME:VERSION docker://REPO:VERSION`);
//   - NAME-OS-ARCH.tar: a docker-archive tarball per platform, tagged REPO:VERSION, for
//     `docker load -i` and `podman load -i`.
//
// The names, the source label and the pinned Debian packages are in images.env; the Dockerfile's
// test and deploy/ use the same names. gpuctl-reconciler and gpuctl are static
// (CGO_ENABLED=0) for linux/amd64 and linux/arm64, on a base of /etc/passwd and /etc/group with
// the user nonroot (65532), Debian's CA certificates in /etc/ssl/certs/ca-certificates.crt, an
// empty /tmp and /home/nonroot. gpuctl-node-labeler is cgo, linux/amd64 only, on the same base
// plus Debian's libc6, into which the NVIDIA container toolkit mounts libnvidia-ml.so.1.
//
// The images are reproducible: every file has the time 0 and root or nonroot as owner, layers
// are sorted, the configuration's created time is the commit's, and the Debian packages are
// pinned; the same commit gives the same digests. Equivalent Dockerfile targets (on distroless
// bases) are in the repository's Dockerfile.
package main
