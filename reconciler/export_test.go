package reconciler

import (
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// SwitchOffTenantScopeCheck disables the plan-time tenant scope rule until the returned
// function restores it: a test then sees what the API server alone does with a tenant's
// cluster-scoped or foreign-namespace object.
func SwitchOffTenantScopeCheck() (restore func()) {
	checkTenantScope = func(*unstructured.Unstructured, bool) string { return "" }
	return func() { checkTenantScope = tenantScopeError }
}

// SetTenantRBACWait sets how long a tenant's Forbidden write is retried, until the returned
// function restores it.
func SetTenantRBACWait(d time.Duration) (restore func()) {
	old := tenantRBACWait
	tenantRBACWait = d
	return func() { tenantRBACWait = old }
}
