// Package nodelabeler turns what NVML says about a node (an [nvmlinfo.Inventory]) into the
// g8s.host/ GPU labels (internal/keys; docs/node-labeler.md lists them), and publishes them
// on the node's Node object with server-side apply under the field manager
// gpuctl-node-labeler.
//
// The mapping is pure and needs no cluster:
//
//	labels := nodelabeler.Labels(inv) // g8s.host/gpu-type=a100-80g, gpu-count=8, ...
//
// [Apply] writes one set of labels; [Run] discovers and applies every interval. Labels that
// the labeler stops publishing disappear from the node (they are owned by its apply), and
// labels that anyone else set are never touched.
package nodelabeler
