package render_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	"github.com/gpuctl/gpuctl/render"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// renderHolding renders files below /repo with Options.Hold.
func renderHolding(t *testing.T, files map[string]string) (*render.Result, error) {
	t.Helper()
	fs, err := render.MemFS("/repo", files)
	if err != nil {
		t.Fatal(err)
	}
	return render.New(render.Options{Hold: true}).Render(fs, "/repo")
}

// refs lists the objects as namespace/kind/name, sorted.
func refs(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetNamespace()+"/"+object.KindOf(o)+"/"+o.GetName())
	}
	slices.Sort(out)
	return out
}

// TestHoldConfinesATeamsErrors: a team's bad file holds that team's files only (issue 30, the
// design gap: "a careless team stops every team"); every other scope renders, and the held
// namespace keeps its identity and its place in the admission policy.
func TestHoldConfinesATeamsErrors(t *testing.T) {
	quota := "kind: quota\nversion: v0.1\nmetadata: {name: q}\nusers:\n  alice: {cpu: 8, memory: 16Gi, gpu: 4}\n  bob: {cpu: 8, memory: 16Gi, gpu: 4}\n"
	files := map[string]string{
		".gpuctl.yaml":           tenantConfig,
		"quotas/q.yaml":          quota,
		"teams/alice/sft.yaml":   training,
		"teams/bob/good.yaml":    strings.Replace(training, "name: sft", "name: bob-good", 1),
		"teams/bob/widget.yaml":  "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: root}\n",
		"teams/bob/typo.yaml":    strings.Replace(training, "gpu: 2", "gpus: 2", 1),
		"teams/carol/notes.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: notes}\ndata: {a: b}\n",
	}
	// Without Hold, bob's errors fail the whole revision (gpuctl validate, diff, the edits).
	if _, err := renderFiles(t, files); err == nil {
		t.Fatal("a render without Hold succeeded with bob's errors")
	}
	res, err := renderHolding(t, files)
	if err != nil {
		t.Fatalf("render with Hold: %v", err)
	}
	if got := render.HeldNamespaces(res.Held); !slices.Equal(got, []string{"bob"}) {
		t.Fatalf("held = %v, want [bob]", got)
	}
	var errs []string
	for _, d := range res.Held[0].Errors {
		errs = append(errs, d.Error())
	}
	if len(errs) != 2 || !strings.HasPrefix(errs[0], "/repo/teams/bob/typo.yaml:8:3: resources.gpus:") ||
		!strings.HasPrefix(errs[1], "/repo/teams/bob/widget.yaml:2:7: kind: tenancy") {
		t.Errorf("bob's errors = %q", errs)
	}
	if len(res.Errors()) != 0 {
		t.Errorf("the result has errors: %v", res.Errors())
	}
	got := refs(res.Objects)
	for _, want := range []string{"alice/Job/sft", "carol/ConfigMap/notes", "bob/ServiceAccount/gpuctl-tenant",
		"bob/RoleBinding/gpuctl-tenant", "/Namespace/bob"} {
		if !slices.Contains(got, want) {
			t.Errorf("missing %s in %v", want, got)
		}
	}
	for _, o := range res.Objects { // bob's own objects are not rendered: only the admin's for bob
		if o.GetNamespace() == "bob" && o.GetAnnotations()[keys.Tenant] != "" {
			t.Errorf("held bob's object %s/%s was rendered", object.KindOf(o), o.GetName())
		}
	}
	for _, o := range res.Objects {
		if object.KindOf(o) != "ValidatingAdmissionPolicyBinding" {
			continue
		}
		if data, _ := json.Marshal(o.Object); !strings.Contains(string(data), `"bob"`) {
			t.Errorf("the admission policy's binding dropped the held namespace bob: %s", data)
		}
	}
}

// TestHoldAnAdminErrorHoldsEverything: an error outside tenant directories (an admin's file)
// still fails the render: admin files change every team.
func TestHoldAnAdminErrorHoldsEverything(t *testing.T) {
	files := map[string]string{
		".gpuctl.yaml":          tenantConfig,
		"teams/alice/sft.yaml":  training,
		"teams/bob/widget.yaml": strings.Replace(training, "gpu: 2", "gpus: 2", 1),
		"pools/bad.yaml":        "kind: pool\nversion: v0.1\nmetadata: {name: p}\nnodez: {}\n",
	}
	res, err := renderHolding(t, files)
	var ve *render.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v, want a validation error", err)
	}
	if len(res.Objects) != 0 || len(res.Held) != 0 {
		t.Errorf("objects %d, held %v: want none", len(res.Objects), render.HeldNamespaces(res.Held))
	}
	if len(res.Errors()) != 2 {
		t.Errorf("errors = %v, want bob's and the pool's", res.Errors())
	}
}

// TestHoldAKustomization: a team's kustomization that breaks its rules holds the team, and
// its directory is not built.
func TestHoldAKustomization(t *testing.T) {
	files := map[string]string{
		".gpuctl.yaml":                     tenantConfig,
		"teams/alice/sft.yaml":             training,
		"teams/bob/app/kustomization.yaml": "resources: [../../alice/sft.yaml]\n",
	}
	res, err := renderHolding(t, files)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	if got := render.HeldNamespaces(res.Held); !slices.Equal(got, []string{"bob"}) {
		t.Fatalf("held = %v, want [bob]", got)
	}
	if !slices.Contains(refs(res.Objects), "alice/Job/sft") {
		t.Errorf("alice's job is missing: %v", refs(res.Objects))
	}
}

// TestHoldATeamsDuplicateOfAnAdminsObject: a team's file that declares an object an admin's
// file declares too (bob's ConfigMap named as the platform's one in bob's namespace) is the
// team's error, whichever file the render reads first: bob is held, and the admin's object
// renders.
func TestHoldATeamsDuplicateOfAnAdminsObject(t *testing.T) {
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: platform, namespace: bob}\ndata: {owner: platform}\n"
	files := map[string]string{
		".gpuctl.yaml":         tenantConfig,
		"teams/alice/sft.yaml": training,
		"teams/bob/steal.yaml": strings.Replace(cm, "namespace: bob", "namespace: bob, labels: {x: y}", 1),
		"zz-platform/cm.yaml":  cm, // read after teams/
	}
	res, err := renderHolding(t, files)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	if got := render.HeldNamespaces(res.Held); !slices.Equal(got, []string{"bob"}) {
		t.Fatalf("held = %v, want [bob]", got)
	}
	if e := res.Held[0].Errors[0].Error(); !strings.HasPrefix(e, "/repo/teams/bob/steal.yaml:1: ConfigMap bob/platform is rendered twice: also from /repo/zz-platform/cm.yaml") {
		t.Errorf("bob's error %q", e)
	}
	for _, o := range res.Objects {
		if o.GetName() == "platform" && o.GetLabels()["x"] == "y" {
			t.Error("bob's copy of the platform's ConfigMap was rendered")
		}
	}
	if !slices.Contains(refs(res.Objects), "bob/ConfigMap/platform") {
		t.Errorf("the platform's ConfigMap is missing: %v", refs(res.Objects))
	}
}
