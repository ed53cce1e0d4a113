// Package e2e holds end-to-end tests that need a real API server: they start the local
// cluster of test/testcluster once for the package (TestMain) and fail, never skip, when
// it cannot start.
package e2e
