// Package daemoncmd builds the gpuctl-reconciler command: flag groups (option types with
// BindFlags) and the wiring of source, engine, daemon loop, leader election and HTTP server.
// cmd/gpuctl-reconciler only calls it.
package app
