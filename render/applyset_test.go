package render_test

import (
	"strings"
	"testing"
)

// TestApplySetKeysRefused: a file that writes an applyset.kubernetes.io/ label or annotation
// (kubectl ApplySet bookkeeping, which gpuctl writes itself) is refused at the key's line, in
// a team directory, an admin directory and below a kustomization alike; kustomize adding one
// is refused at the kustomization's line.
func TestApplySetKeysRefused(t *testing.T) {
	const rule = "applyset.kubernetes.io/ keys are ApplySet bookkeeping that gpuctl writes itself: a file may not set them (it would claim or join another tool's ApplySet)"
	cases := map[string]struct {
		files map[string]string // below DIR
		want  []string          // errors, with DIR for the directory
	}{
		"part-of label": {files: map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  labels:\n" +
			"    app: x\n    applyset.kubernetes.io/part-of: applyset-abc-v1\n"},
			want: []string{"DIR/cm.yaml:7:37: metadata.labels[applyset.kubernetes.io/part-of]: " + rule}},
		"tooling and id on a would-be parent": {files: map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n" +
			"  labels: {applyset.kubernetes.io/id: applyset-abc-v1}\n  annotations:\n    applyset.kubernetes.io/tooling: kubectl/v1.30\n"},
			want: []string{
				"DIR/cm.yaml:5:39: metadata.labels[applyset.kubernetes.io/id]: " + rule,
				"DIR/cm.yaml:7:37: metadata.annotations[applyset.kubernetes.io/tooling]: " + rule}},
		"a resource of a kustomization": {files: map[string]string{
			"kustomization.yaml": "resources: [cm.yaml]\n",
			"cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  labels: {applyset.kubernetes.io/part-of: x}\n"},
			want: []string{"DIR/cm.yaml:5:44: metadata.labels[applyset.kubernetes.io/part-of]: " + rule}},
		"added by kustomize": {files: map[string]string{
			"kustomization.yaml": "resources: [cm.yaml]\nlabels:\n  - pairs:\n      applyset.kubernetes.io/part-of: applyset-abc-v1\n",
			"cm.yaml":            configMap},
			want: []string{"DIR/kustomization.yaml:4:7: metadata.labels[applyset.kubernetes.io/part-of]: kustomize output ConfigMap cm: " + rule}},
		"added by a kustomize patch": {files: map[string]string{
			"kustomization.yaml": "resources: [cm.yaml]\npatches:\n  - path: p.yaml\n",
			"p.yaml":             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  annotations: {applyset.kubernetes.io/contains-group-kinds: Secret}\n",
			"cm.yaml":            configMap},
			want: []string{"DIR/kustomization.yaml: metadata.annotations[applyset.kubernetes.io/contains-group-kinds]: kustomize output ConfigMap cm: " + rule}},
	}
	for name, tc := range cases {
		for _, dir := range []string{"teams/alice", "platform"} {
			t.Run(name+" in "+dir, func(t *testing.T) {
				files := map[string]string{".gpuctl.yaml": tenantConfig}
				for f, c := range tc.files {
					files[dir+"/"+f] = c
				}
				res, err := renderFiles(t, files)
				var got []string
				for _, d := range res.Errors() {
					got = append(got, d.Error())
				}
				want := strings.Split(strings.ReplaceAll(strings.Join(tc.want, "\n"), "DIR/", "/repo/"+dir+"/"), "\n")
				if err == nil || strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Errorf("errors:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
				}
			})
		}
	}
}
