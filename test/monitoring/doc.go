// Package monitoring checks the operations kit in deploy/monitoring, gpuctl's Prometheus
// Operator objects:
//
//   - the PrometheusRule's groups pass `promtool check rules`, and `promtool test rules` with
//     testdata/rules_test.yaml, input series that fire and that do not fire each alert (promtool
//     from Debian's prometheus package, test/promtest's [promtest.Binaries]);
//   - the Grafana dashboard's JSON parses, each panel has a query, and every metric name in its
//     queries and in the rules' expressions is one that gpuctl-reconciler registers (the daemon's
//     metrics, the API's, Go's and the process's, as cmd/gpuctl-reconciler/app builds its
//     registry; up is Prometheus' own).
//
// The kustomization is built, and its ServiceMonitor checked against the Service of
// deploy/base, by test/e2e's TestDeployManifests, with every kustomization of deploy/.
//
// Each check has a test that breaks it on purpose (a syntax error, a wrong threshold, an
// unknown metric) and sees it fail.
package monitoring
