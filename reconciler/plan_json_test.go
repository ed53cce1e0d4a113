package reconciler

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/internal/object"
)

// TestPlanJSONShape: a plan's and a change set's objects are written with group and version
// apart, in the documented order, and read back.
func TestPlanJSONShape(t *testing.T) {
	web := object.Ref{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "team", Name: "web"}
	ns := object.Ref{APIVersion: "v1", Kind: "Namespace", Name: "team"}
	cases := map[string]struct {
		v    any
		want string
	}{
		"change": {&Change{Object: web, Action: ActionUpdate, Source: "web.yaml",
			Diff: []object.FieldDiff{{Path: "spec.replicas", Old: int64(1), New: int64(3)}}},
			`{"object":{"group":"apps","version":"v1","kind":"Deployment","namespace":"team","name":"web"},"action":"update",` +
				`"diff":[{"path":"spec.replicas","old":1,"new":3}],"source":"web.yaml"}`},
		"core group": {&Change{Object: ns, Action: ActionUnchanged},
			`{"object":{"version":"v1","kind":"Namespace","name":"team"},"action":"unchanged"}`},
		"result": {Result{Object: web, Action: ActionCreate, Duration: time.Second},
			`{"object":{"group":"apps","version":"v1","kind":"Deployment","namespace":"team","name":"web"},"action":"create","duration":1000000000}`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b, err := json.Marshal(tc.v)
			if err != nil || string(b) != tc.want {
				t.Fatalf("got %s (%v)\nwant %s", b, err, tc.want)
			}
			var c Change
			if err := json.Unmarshal(b, &c); err != nil {
				t.Fatal(err)
			}
			var r Result
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			want := web
			if name == "core group" {
				want = ns
			}
			if c.Object != want || r.Object != want {
				t.Errorf("read back %+v and %+v, want %+v", c.Object, r.Object, want)
			}
		})
	}
	cs, err := json.Marshal(&ChangeSet{Results: []Result{{Object: ns, Action: ActionCreate}}})
	if want := `{"results":[{"object":{"version":"v1","kind":"Namespace","name":"team"},"action":"create","duration":0}],"duration":0}`; err != nil || string(cs) != want {
		t.Errorf("change set %s, want %s", cs, want)
	}
}
