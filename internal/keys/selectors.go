package keys

import (
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// QuotaSelector selects the teams' ResourceQuotas that render writes: those labelled
// g8s.host/quota.
var QuotaSelector = func() labels.Selector {
	r, err := labels.NewRequirement(Quota, selection.Exists, nil)
	if err != nil {
		panic(err)
	}
	return labels.NewSelector().Add(*r)
}()
