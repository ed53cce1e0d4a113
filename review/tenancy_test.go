package review_test

import (
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/review"
	"github.com/gpuctl/gpuctl/test/gittest"
)

// tenancyBase is a base revision with the fixture's namespace mapping and policy
// (maxGPUsPerJob 16, registries registry.example.com and docker.io/library, high priority for
// alice only) and alice's training job built by a kustomization.
func tenancyBase() map[string]string {
	return map[string]string{
		".gpuctl.yaml":                   fixtureConfig,
		"gpuctl-policy.yaml":             fixturePolicy,
		"teams/alice/kustomization.yaml": "resources: [sft.yaml]\n",
		"teams/alice/sft.yaml":           strings.Replace(training("sft", "default", "", 2, 1, ""), "  gpu-type: \n", "", 1),
	}
}

// with returns a copy of files with more set.
func with(files map[string]string, more map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range files {
		out[k] = v
	}
	for k, v := range more {
		out[k] = v
	}
	return out
}

const (
	// plainJob is a plain Job that requests 8 pods × 8 GPUs: 64.
	plainJob = `apiVersion: batch/v1
kind: Job
metadata: {name: big}
spec:
  parallelism: 8
  completions: 8
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: train
          image: registry.example.com/trainer:v1
          resources:
            limits: {nvidia.com/gpu: 8}
`
	// gpuPatch raises alice's gpuctl training job to 32 GPUs and swaps its image.
	gpuPatch = `resources: [sft.yaml]
patches:
  - target: {kind: Job, name: sft}
    patch: |-
      - op: replace
        path: /spec/template/spec/containers/0/image
        value: ghcr.io/evil/miner:latest
      - op: replace
        path: /spec/template/spec/containers/0/resources/limits/nvidia.com~1gpu
        value: "32"
      - op: replace
        path: /spec/template/spec/containers/0/resources/requests/nvidia.com~1gpu
        value: "32"
`
	// highDeployment is a plain Deployment of priority class gpuctl-high.
	highDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: urgent}
spec:
  replicas: 1
  selector: {matchLabels: {app: urgent}}
  template:
    metadata: {labels: {app: urgent}}
    spec:
      priorityClassName: gpuctl-high
      initContainers:
        - name: fetch
          image: quay.io/evil/fetch:v1
      containers:
        - name: serve
          image: registry.example.com/serve:v1
`
)

// The policy's per-workload limits hold for every rendered object that runs pods, not only
// for gpuctl documents: a plain manifest or a kustomize patch cannot get around them.
func TestPolicyChecksRenderedObjects(t *testing.T) {
	cases := map[string]struct {
		head map[string]string
		want []string // "rule file: message part"
	}{
		"plain Job with 64 GPUs": {
			head: map[string]string{"teams/bob/big.yaml": plainJob},
			want: []string{"maxGPUsPerJob teams/bob/big.yaml: Job bob/big requests 64 GPUs in all"},
		},
		"kustomize patch raises GPUs and swaps the image": {
			head: map[string]string{"teams/alice/kustomization.yaml": gpuPatch},
			want: []string{
				"maxGPUsPerJob teams/alice/sft.yaml: Job alice/sft requests 32 GPUs in all",
				"allowedRegistries teams/alice/sft.yaml: Job alice/sft: image ghcr.io/evil/miner:latest is not from an allowed registry",
			},
		},
		"plain Deployment of priority gpuctl-high outside highPriorityTeams": {
			head: map[string]string{"teams/bob/urgent.yaml": highDeployment},
			want: []string{
				"highPriorityTeams teams/bob/urgent.yaml: Deployment bob/urgent: priority class gpuctl-high is reserved for alice",
				"allowedRegistries teams/bob/urgent.yaml: Deployment bob/urgent: image quay.io/evil/fetch:v1 is not from an allowed registry",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			base := &review.Revision{Name: "base", Files: tenancyBase()}
			head := &review.Revision{Name: "head", Files: with(tenancyBase(), tc.head)}
			rep, err := review.Compose(base, head, ".")
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, v := range rep.Failing() {
				got = append(got, string(v.Rule)+" "+v.File+": "+v.Message)
				if v.Line == 0 {
					t.Errorf("no line: %s %s: %s", v.Rule, v.File, v.Message)
				}
			}
			for _, w := range tc.want {
				found := false
				for _, g := range got {
					found = found || strings.HasPrefix(g, w)
				}
				if !found {
					t.Errorf("no failing violation %q; got:\n%s", w, strings.Join(got, "\n"))
				}
			}
			if len(got) != len(tc.want) {
				t.Errorf("%d failing violations, want %d:\n%s", len(got), len(tc.want), strings.Join(got, "\n"))
			}
		})
	}
}

// clusterAdmin binds cluster-admin to alice's default ServiceAccount.
const clusterAdmin = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: alice-admin}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: default, namespace: alice}]
`

// A change cannot loosen the configuration it is reviewed under: both revisions render with
// the base's .gpuctl.yaml, and any change to an admin file fails the review.
func TestAdminFilesComeFromTheBase(t *testing.T) {
	r := gittest.New(t, nil)
	r.Commit("base", map[string]string{".gpuctl.yaml": fixtureConfig, "gpuctl-policy.yaml": fixturePolicy,
		"teams/alice/sft.yaml": training("sft", "default", "A100-80G", 2, 1, "")})
	r.Git("tag", "base")
	steps := []struct {
		tag   string
		files map[string]string
		want  []string // "rule file: message part" of failing violations
	}{
		{"unmap", map[string]string{".gpuctl.yaml": "version: v0.1\nnamespaces: []\n", "teams/alice/crb.yaml": clusterAdmin}, []string{
			"policy .gpuctl.yaml: admin file .gpuctl.yaml is modified in this change",
			"render teams/alice/crb.yaml: ", // the message is render's
		}},
		{"loosen-policy", map[string]string{"gpuctl-policy.yaml": "version: v0.1\n"}, []string{
			"policy gpuctl-policy.yaml: admin file gpuctl-policy.yaml is modified in this change",
		}},
		{"nested-config", map[string]string{"teams/alice/.gpuctl.yaml": "version: v0.1\n"}, []string{
			"policy teams/alice/.gpuctl.yaml: admin file teams/alice/.gpuctl.yaml is added in this change",
		}},
		{"remove-policy", map[string]string{"gpuctl-policy.yaml": ""}, []string{
			"policy gpuctl-policy.yaml: admin file gpuctl-policy.yaml is removed in this change",
		}},
	}
	for _, s := range steps {
		r.Git("checkout", "-q", "base")
		r.Git("checkout", "-q", "-B", s.tag)
		r.CommitTo(s.tag, s.tag, s.files)
		r.Git("tag", s.tag)
	}
	for _, s := range steps {
		t.Run(s.tag, func(t *testing.T) {
			rep, err := review.Run(review.Options{Dir: r.Work, Base: "base", Head: s.tag})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, v := range rep.Failing() {
				got = append(got, string(v.Rule)+" "+v.File+": "+v.Message)
			}
			for _, w := range s.want {
				found := false
				for _, g := range got {
					found = found || strings.HasPrefix(g, w)
				}
				if !found {
					t.Errorf("no failing violation %q; got:\n%s", w, strings.Join(got, "\n"))
				}
			}
			if len(got) != len(s.want) {
				t.Errorf("%d failing violations, want %d:\n%s", len(got), len(s.want), strings.Join(got, "\n"))
			}
			if rep.Policy == nil || rep.Policy.MaxGPUsPerJob != 16 {
				t.Errorf("the checks must use the base's policy, got %+v", rep.Policy)
			}
		})
	}
}

// An autoscaler's maxReplicas counts: one replica of 8 GPUs that an HPA scales to 10 is 80.
func TestMaxGPUsCountsTheAutoscaler(t *testing.T) {
	deployment := strings.NewReplacer("name: urgent", "name: wide", "app: urgent", "app: wide",
		"priorityClassName: gpuctl-high", "priorityClassName: gpuctl-medium",
		"image: quay.io/evil/fetch:v1", "image: registry.example.com/fetch:v1",
		"image: registry.example.com/serve:v1", "image: registry.example.com/serve:v1\n          resources: {limits: {nvidia.com/gpu: 8}}").Replace(highDeployment)
	hpa := "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: wide}\n" +
		"spec:\n  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: wide}\n  minReplicas: 1\n  maxReplicas: 10\n" +
		"  metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}}]\n"
	base := &review.Revision{Name: "base", Files: tenancyBase()}
	head := &review.Revision{Name: "head", Files: with(tenancyBase(), map[string]string{"teams/bob/wide.yaml": deployment + "---\n" + hpa})}
	rep, err := review.Compose(base, head, ".")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range rep.Failing() {
		got = append(got, string(v.Rule)+" "+v.Where()+": "+v.Message)
	}
	want := "maxGPUsPerJob teams/bob/wide.yaml:1: Deployment bob/wide requests 80 GPUs in all"
	if len(got) != 1 || !strings.HasPrefix(got[0], want) {
		t.Errorf("got %q, want one %q", got, want)
	}
}
