// Package deploytest checks deploy/node-labeler against the local test cluster: the kustomize
// build, the API server's validation, and the real gpuctl-node-labeler binary working with
// nothing but the ServiceAccount's RBAC. It holds no code, only tests.
//
// The tests live here, not next to the binary, because kustomize's krusty imports "plugin",
// and the Go linker then links the whole test binary with -z now; together with go-nvml's
// undefined NVML symbols, that binary would die at start on a machine without the driver.
package deploytest
