// Package app builds the gpuctl-reconciler command: its flags (the source's SourceOptions
// here; the render and engine flags of cmd/options, shared with gpuctl; the cluster flags of
// internal/kube) and the wiring of source, engine, daemon loop, leader election and HTTP
// server. cmd/gpuctl-reconciler only calls it.
package app
