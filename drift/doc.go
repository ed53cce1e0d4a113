// Package drift will model and format drift reports: where the cluster differs from Git, who
// made it differ, and GPU workloads that bypass review.
//
// Not implemented yet: it arrives with the issue "Drift detection and drift reports for
// admins". Until then this package holds no code.
package drift
