// Package drift models drift reports: where the cluster differs from Git, who made it differ,
// and GPU workloads that bypass review. It holds the data (Report, Item, Entry), the drift
// Mode (the value of gpuctl-reconciler --drift), the bounded history of changes, their
// renderings as text, JSON and Markdown, and the Store that keeps the current report and the
// history in a ConfigMap of the daemon's namespace. Objects are named by object.Ref, and
// values print as object.Display prints them (package internal/object), the same in text,
// Markdown and the web page.
//
// Detection lives in drift/detector; this package needs no watch and no engine, so the CLI
// (`gpuctl drift`), the HTTP API and the web page read reports through it.
//
//	r, hist, err := drift.NewStore(kube, keys.SystemNamespace).Read(ctx)
//	now := time.Now()
//	drift.WriteText(os.Stdout, r.Since(hist, 24*time.Hour, now), now)
package drift
