package cluster

import (
	"context"
	"errors"
	"testing"

	fx "github.com/gpuctl/gpuctl/test/clusterfixture"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
)

// testReader reads the fixture cluster, or objs when there are any, through a fake clientset.
func testReader(t *testing.T, objs ...runtime.Object) *Reader {
	t.Helper()
	if objs == nil {
		objs = fx.Objects()
	}
	return &Reader{Client: fake.NewClientset(objs...)}
}

// wantFilterError checks that err is a *FilterError of the field.
func wantFilterError(t *testing.T, err error, field string) {
	t.Helper()
	var fe *FilterError
	if !errors.As(err, &fe) {
		t.Fatalf("error %v (%T), want a *FilterError", err, err)
	}
	if fe.Field != field || fe.Error() != field+": "+fe.Message || fe.Message == "" {
		t.Errorf("filter error %+v, want one of field %s", fe, field)
	}
}

// wantNotFound checks that err is a *NotFoundError of the kind and name.
func wantNotFound(t *testing.T, err error, kind, name string) {
	t.Helper()
	var nf *NotFoundError
	if !errors.As(err, &nf) {
		t.Fatalf("error %v (%T), want a *NotFoundError", err, err)
	}
	if nf.Kind != kind || nf.Name != name {
		t.Errorf("not found %+v, want %s %q", nf, kind, name)
	}
}

var ctx = context.Background()

func TestPaginate(t *testing.T) {
	items := []int{1, 2, 3, 4, 5}
	tests := map[string]struct {
		page Page
		want []int
	}{
		"zero page: all":  {Page{}, items},
		"first":           {Page{Number: 1, Size: 2}, []int{1, 2}},
		"last, short":     {Page{Number: 3, Size: 2}, []int{5}},
		"past end":        {Page{Number: 4, Size: 2}, []int{}},
		"number 0 is one": {Page{Size: 3}, []int{1, 2, 3}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := paginate(items, tc.page)
			if got == nil || len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
}
