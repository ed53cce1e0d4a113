// Package reconciler will pair rendered objects with live ones, plan the changes (create,
// update, recreate, delete, unchanged, skipped), apply them with server-side apply in stages
// and prune what left Git. It returns data — a plan and a change set — that cmd/ prints.
//
// Not implemented yet: it arrives with the issue "The reconciler engine against a real local
// cluster". Until then this package holds no code.
package reconciler
