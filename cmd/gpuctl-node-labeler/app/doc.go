// Package app is the command of gpuctl-node-labeler: its flags (node name, NVML source, pass
// interval, --oneshot, logging, the cluster) and the wiring of nodelabeler.Labeler to NVML
// (nodelabeler/nvmlinfo) and to the Node API. cmd/gpuctl-node-labeler's main is its only
// importer.
package app
