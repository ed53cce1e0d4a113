package render_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	"github.com/gpuctl/gpuctl/render"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// withSecrets is a workload's file that refers to three Secrets: one key as a variable (line
// 10), a whole Secret as variables (line 13) and a Secret as files (line 17).
const withSecrets = `kind: KIND
version: v0.1
job:
  name: w
environment:
  image: registry.example.com/app:v1
  env:
    - name: HF_TOKEN
      secret:
        name: hf-token
        key: token
  envFrom:
    - secret: wandb
      prefix: WANDB_
storage:
  secrets:
    - name: s3-creds
      path: /etc/s3/
RESOURCES`

// secretsFile is withSecrets as kind, with resources (YAML at the top level) appended.
func secretsFile(kind, resources string) string {
	return strings.NewReplacer("KIND", kind, "RESOURCES", resources).Replace(withSecrets)
}

// podSpecOf returns the pod spec of a rendered workload object (object.PodTemplatePath; a
// JobSet's of its one replicated Job).
func podSpecOf(t *testing.T, u *unstructured.Unstructured) corev1.PodSpec {
	t.Helper()
	m := u.Object
	if u.GetKind() == render.JobSetKind {
		jobs, _, _ := unstructured.NestedSlice(m, "spec", "replicatedJobs")
		if len(jobs) != 1 {
			t.Fatalf("%d replicated Jobs, want 1", len(jobs))
		}
		m, _, _ = unstructured.NestedMap(jobs[0].(map[string]any), "template")
		u = &unstructured.Unstructured{Object: m}
		u.SetKind("Job")
	}
	tp, ok := object.PodTemplatePath(u.GetKind())
	if !ok {
		t.Fatalf("%s has no pod template", u.GetKind())
	}
	for _, k := range append(tp, "spec") {
		m, _ = m[k].(map[string]any)
	}
	var spec corev1.PodSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &spec); err != nil {
		t.Fatal(err)
	}
	return spec
}

// TestSecretReferencesInEveryKind: each workload kind — single-node and multi-node training
// (an Indexed Job, or a JobSet with multiNode jobset), inference, notebook, compute — gets
// the variable from a key (secretKeyRef), the Secret's keys as variables (envFrom secretRef
// with its prefix) and the Secret mounted read-only (volume secret-0) in its pod template, in
// a tenant directory (the tenant pod policy allows them); its workload object records the
// three references with their lines, and its Services record none.
func TestSecretReferencesInEveryKind(t *testing.T) {
	cases := map[string]struct {
		kind, resources, config string
		workload                string // the kind of the object that runs the pods
	}{
		"training":            {kind: "training", resources: "resources: {gpu: 1}\n", workload: "Job"},
		"multi-node training": {kind: "training", resources: "resources: {gpu: 8, node_count: 2}\n", workload: "Job"},
		"jobset":              {kind: "training", resources: "resources: {gpu: 8, node_count: 2}\n", config: "multiNode: jobset\n", workload: render.JobSetKind},
		"inference":           {kind: "inference", resources: "service: {port: 8000}\n", workload: "Deployment"},
		"notebook":            {kind: "notebook", workload: "StatefulSet"},
		"compute":             {kind: "compute", resources: "service: {port: 80}\n", workload: "Deployment"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res, err := renderFiles(t, map[string]string{".gpuctl.yaml": teamsConfig + tc.config,
				"teams/alice/w.yaml": secretsFile(tc.kind, tc.resources)})
			if err != nil {
				t.Fatal(err)
			}
			workloads := 0
			for _, u := range res.Objects {
				if u.GetNamespace() != "alice" || (u.GetKind() != tc.workload && u.GetKind() != "Service") {
					continue
				}
				if u.GetKind() == "Service" {
					if _, ok := u.GetAnnotations()[keys.SecretRefs]; ok {
						t.Errorf("Service %s records Secret references", u.GetName())
					}
					continue
				}
				workloads++
				checkSecretPod(t, podSpecOf(t, u))
				refs, err := render.TakeSecretRefs(u)
				want := []render.SecretRef{{Secret: "hf-token", Line: 10, Field: "environment.env[0].secret.name"},
					{Secret: "wandb", Line: 13, Field: "environment.envFrom[0].secret"},
					{Secret: "s3-creds", Line: 17, Field: "storage.secrets[0].name"}}
				if err != nil || !slices.Equal(refs, want) {
					t.Errorf("references %+v (%v), want %+v", refs, err, want)
				}
				if _, ok := u.GetAnnotations()[keys.SecretRefs]; ok {
					t.Error("TakeSecretRefs left the annotation")
				}
			}
			if workloads != 1 {
				t.Fatalf("%d %s objects in namespace alice, want 1", workloads, tc.workload)
			}
		})
	}
}

// checkSecretPod checks the pod spec of withSecrets.
func checkSecretPod(t *testing.T, spec corev1.PodSpec) {
	t.Helper()
	c := spec.Containers[0]
	i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "HF_TOKEN" })
	if i < 0 || c.Env[i].Value != "" || c.Env[i].ValueFrom == nil || c.Env[i].ValueFrom.SecretKeyRef == nil ||
		c.Env[i].ValueFrom.SecretKeyRef.Name != "hf-token" || c.Env[i].ValueFrom.SecretKeyRef.Key != "token" {
		t.Errorf("HF_TOKEN is not taken from Secret hf-token, key token: %+v", c.Env)
	}
	if len(c.EnvFrom) != 1 || c.EnvFrom[0].Prefix != "WANDB_" || c.EnvFrom[0].SecretRef == nil || c.EnvFrom[0].SecretRef.Name != "wandb" {
		t.Errorf("envFrom %+v, want Secret wandb with prefix WANDB_", c.EnvFrom)
	}
	v := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == "secret-0" })
	m := slices.IndexFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == "secret-0" })
	if v < 0 || spec.Volumes[v].Secret == nil || spec.Volumes[v].Secret.SecretName != "s3-creds" {
		t.Errorf("no volume secret-0 of Secret s3-creds: %+v", spec.Volumes)
	}
	if m < 0 || c.VolumeMounts[m].MountPath != "/etc/s3" || !c.VolumeMounts[m].ReadOnly {
		t.Errorf("secret-0 is not mounted read-only at /etc/s3: %+v", c.VolumeMounts)
	}
}

// TestSecretReferenceRules: each invalid reference is an error at its file, line and field;
// the fields take every spelling, and a misspelt one gets a suggestion.
func TestSecretReferenceRules(t *testing.T) {
	env := func(lines string) map[string]string {
		return map[string]string{"a.yaml": strings.Replace(training, "  image: pytorch/pytorch:2.3.0", "  image: p\n"+lines, 1)}
	}
	mounts := func(lines string) map[string]string {
		return map[string]string{"a.yaml": training + "storage:\n" + lines}
	}
	cases := map[string]ruleCase{
		"every spelling": {valid: true, files: map[string]string{"a.yaml": strings.Replace(training, "  image: pytorch/pytorch:2.3.0",
			"  image: p\n  env_from: [{secret: a}]\n  env:\n    - {name: A, secret: {name: b, key: c.d_e-f}}\n  image-pull-secret: reg.creds", 1) +
			"storage: {secrets: [{name: s, path: /etc/s}], workdirs: [{path: /datasets/x}]}\n"}},
		"value and secret": {files: env("  env:\n    - name: A\n      value: x\n      secret: {name: s, key: k}\n"),
			want: []string{`/repo/a.yaml:10:15: environment.env[0].secret: set value or secret, not both`}},
		"secret without key": {files: env("  env:\n    - name: A\n      secret: {name: s}\n"),
			want: []string{`/repo/a.yaml:9:15: environment.env[0].secret.key: required field is missing`}},
		"secret name not a DNS name": {files: env("  env:\n    - name: A\n      secret: {name: HF_Token, key: k}\n"),
			want: []string{`/repo/a.yaml:9:22: environment.env[0].secret.name: "HF_Token" is not a valid Secret name`}},
		"invalid key": {files: env("  env:\n    - name: A\n      secret: {name: s, key: a/b}\n"),
			want: []string{`/repo/a.yaml:9:30: environment.env[0].secret.key: "a/b" is not a valid Secret key`}},
		"secret as a string": {files: env("  env:\n    - name: A\n      secret: hf-token\n"),
			want: []string{`/repo/a.yaml:9:15: environment.env[0].secret: expected a mapping, got "hf-token"`}},
		"valueFrom": {files: env("  env:\n    - name: A\n      valueFrom: {secretKeyRef: {name: s, key: k}}\n"),
			want: []string{`/repo/a.yaml:9:7: environment.env[0].valueFrom: unknown field "valueFrom", expected one of name, value, secret`}},
		"misspelt envFrom": {files: env("  envFrm:\n    - secret: s\n"),
			want: []string{`/repo/a.yaml:7:3: environment.envFrm: unknown field "envFrm", did you mean "envFrom"?`}},
		"envFrom without secret": {files: env("  envFrom:\n    - prefix: X_\n"),
			want: []string{`/repo/a.yaml:8:7: environment.envFrom[0].secret: required field is missing`}},
		"envFrom name": {files: env("  envFrom:\n    - secret: -wandb\n"),
			want: []string{`/repo/a.yaml:8:15: environment.envFrom[0].secret: "-wandb" is not a valid Secret name`}},
		"envFrom prefix": {files: env("  envFrom:\n    - {secret: s, prefix: 1X}\n"),
			want: []string{`/repo/a.yaml:8:27: environment.envFrom[0].prefix: invalid prefix "1X"`}},
		"envFrom twice": {files: env("  envFrom:\n    - secret: s\n    - secret: s\n"),
			want: []string{`/repo/a.yaml:9:15: environment.envFrom[1].secret: Secret "s" is listed twice (also envFrom[0])`}},
		"mount path missing": {files: mounts("  secrets:\n    - name: s\n"),
			want: []string{`/repo/a.yaml:11:7: storage.secrets[0].path: required field is missing`}},
		"mount path relative": {files: mounts("  secrets:\n    - {name: s, path: etc/s}\n"),
			want: []string{`/repo/a.yaml:11:23: storage.secrets[0].path: "etc/s" must be an absolute path`}},
		"mount path not clean": {files: mounts("  secrets:\n    - {name: s, path: /etc/../root}\n"),
			want: []string{`storage.secrets[0].path: "/etc/../root" must be a clean path without ., .. or //`}},
		"mount at /dev/shm": {files: mounts("  secrets:\n    - {name: s, path: /dev/shm}\n"),
			want: []string{`/repo/a.yaml:11:23: storage.secrets[0].path: "/dev/shm" is reserved: a Secret is not mounted at or below /dev, /proc, /sys, /var/run/secrets/kubernetes.io`}},
		"mount over the token": {files: mounts("  secrets:\n    - {name: s, path: /var/run/secrets/kubernetes.io/serviceaccount}\n"),
			want: []string{`storage.secrets[0].path: "/var/run/secrets/kubernetes.io/serviceaccount" is reserved`}},
		"mount at /": {files: mounts("  secrets:\n    - {name: s, path: /}\n"),
			want: []string{`storage.secrets[0].path: a Secret cannot be mounted at /`}},
		"mounted twice": {files: mounts("  workdirs:\n    - path: /datasets/x/\n  secrets:\n    - {name: s, path: /etc/s}\n    - {name: t, path: /etc/s/}\n    - {name: u, path: /datasets/x}\n"),
			want: []string{`/repo/a.yaml:14:23: storage.secrets[1].path: "/etc/s/" is mounted twice (also secrets[0])`,
				`/repo/a.yaml:15:23: storage.secrets[2].path: "/datasets/x" is mounted twice (also workdirs[0])`}},
		"mount name": {files: mounts("  secrets:\n    - {name: S3, path: /etc/s}\n"),
			want: []string{`/repo/a.yaml:11:14: storage.secrets[0].name: "S3" is not a valid Secret name`}},
		"a declared Secret without the key": {files: map[string]string{
			"a.yaml":      strings.Replace(training, "  image: pytorch/pytorch:2.3.0", "  image: p\n  env:\n    - {name: A, secret: {name: s, key: tokn}}\n    - {name: B, secret: {name: s, key: extra}}", 1),
			"secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {extra: eA==}\nstringData: {token: x}\n"},
			want: []string{`/repo/a.yaml:8:40: environment.env[0].secret.key: Secret "s" (secret.yaml) has no key "tokn": the pods would not start, its keys: extra, token`}},
		"a declared Secret with the key, another namespace's without": {valid: true, files: map[string]string{
			"a.yaml": strings.Replace(training, "  image: pytorch/pytorch:2.3.0", "  image: p\n  env:\n    - {name: A, secret: {name: s, key: token}}\n    - {name: B, secret: {name: t, key: token}}", 1),
			"secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {token: x}\n---\n" +
				"apiVersion: v1\nkind: Secret\nmetadata: {name: t, namespace: elsewhere}\nstringData: {other: x}\n"}},
		"misspelt secrets": {files: mounts("  secret:\n    - {name: s, path: /etc/s}\n"),
			want: []string{`/repo/a.yaml:10:3: storage.secret: unknown field "secret", did you mean "secrets"?`}},
	}
	checkRuleCases(t, cases)
}

// TestTakeSecretRefs: an object without references gives none and is left as it is; a broken
// annotation is an error naming it.
func TestTakeSecretRefs(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"annotations": map[string]any{keys.Source: "a.yaml"}}}}
	if refs, err := render.TakeSecretRefs(u); refs != nil || err != nil || u.GetAnnotations()[keys.Source] != "a.yaml" {
		t.Fatalf("no annotation: %v, %v, %v", refs, err, u.Object)
	}
	u.SetAnnotations(map[string]string{keys.SecretRefs: "[{"})
	if _, err := render.TakeSecretRefs(u); err == nil || !strings.Contains(err.Error(), keys.SecretRefs) {
		t.Fatalf("a broken annotation: %v", err)
	}
	if _, ok := u.Object["metadata"].(map[string]any)["annotations"]; ok {
		t.Fatal("the annotation was left")
	}
}
