// Package options holds the flag groups that gpuctl and gpuctl-reconciler share, each an
// option type with BindFlags: Render (the administrator's render settings: --config,
// --namespace-map, --host-path-prefixes, --writable-host-path-prefixes, --queueing) and Engine (how the
// engine plans and applies: --prune, --max-prune, --allow-empty, --force-conflicts,
// --impersonate-tenants) and Prometheus (--prometheus-url and its token and CA). The cluster flags (--kubeconfig, --context) are internal/kube's.
//
// It is on the top floor with the binaries: only cmd/*/app import it. Its errors name the flag
// and are plain; each binary maps them to its exit status.
//
//	var ro options.Render
//	ro.BindFlags(cmd.Flags())
//	...
//	r, err := ro.Renderer()
package options
