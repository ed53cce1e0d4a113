// Package labelertest builds and runs the real gpuctl-node-labeler binary for tests, linked
// lazily as the Makefile does, so that it starts without the NVIDIA driver. It does not import
// go-nvml itself: a test binary that links both go-nvml and kustomize (which imports plugin,
// making the linker bind every symbol at start) would die on a machine without the driver.
package labelertest
