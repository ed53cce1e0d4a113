// Package nvmlinfo asks NVML what GPUs a node has. It depends on the few NVML calls it needs
// through [Library] and [Device], which go-nvml's real library and its mock servers
// (pkg/nvml/mock/dgxa100, dgxh100) both satisfy:
//
//	lib, err := nvmlinfo.Open("mock:dgxa100") // or "real"
//	if err != nil { ... }
//	inv, err := nvmlinfo.Discover(lib)
//	var unavailable *nvmlinfo.UnavailableError
//	if errors.As(err, &unavailable) { ... } // no driver: report zero GPUs
//
// Only cmd/gpuctl-node-labeler imports this package, so the other binaries stay pure Go.
package nvmlinfo
