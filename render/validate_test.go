package render_test

import (
	"errors"
	"path"
	"sort"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/render"
)

// renderFiles writes files into an in-memory filesystem under /repo and renders /repo.
func renderFiles(t *testing.T, files map[string]string) (*render.Result, error) {
	t.Helper()
	fs, err := render.MemFS("/repo", files)
	if err != nil {
		t.Fatal(err)
	}
	res, err := render.New(render.Options{}).Render(fs, "/repo")
	var ve *render.ValidationError
	if err != nil && !errors.As(err, &ve) {
		t.Fatalf("render: %v", err)
	}
	return res, err
}

const training = `kind: training
version: v0.1
job:
  name: sft
environment:
  image: pytorch/pytorch:2.3.0
resources:
  gpu: 2
`

type ruleCase struct {
	files map[string]string
	// want are substrings of diagnostics, each of which must be found ("file:line:col: field: msg").
	want []string
	// valid means the render has no error (warnings may be in want).
	valid bool
}

// TestValidationRules checks each rule: its message, file, line and field.
func TestValidationRules(t *testing.T) {
	cases := map[string]ruleCase{
		"unknown field with suggestion": {files: map[string]string{"a.yaml": strings.Replace(training, "gpu: 2", "gpu: 2\n  gpu_tpye: A100", 1)},
			want: []string{`/repo/a.yaml:9:3: resources.gpu_tpye: unknown field "gpu_tpye", did you mean "gpu-type"?`}},
		"unknown top-level field": {files: map[string]string{"a.yaml": training + "storge: {}\n"},
			want: []string{`/repo/a.yaml:9:1: storge: unknown field "storge", did you mean "storage"?`}},
		"camel and kebab spellings accepted": {valid: true, files: map[string]string{"a.yaml": strings.Replace(training, "gpu: 2", "gpu: 2\n  gpuType: A100-80G\n  node_count: 2", 1)}},
		"two spellings of one field": {files: map[string]string{"a.yaml": strings.Replace(training, "gpu: 2", "gpu: 2\n  gpu-type: a\n  gpuType: b", 1)},
			want: []string{`/repo/a.yaml:10:3: resources.gpu-type: "gpu-type" and "gpuType" are two spellings of the same field (first set on line 9)`}},
		"duplicate key": {files: map[string]string{"a.yaml": strings.Replace(training, "gpu: 2", "gpu: 2\n  gpu: 3", 1)},
			want: []string{`/repo/a.yaml:9:3: resources.gpu: duplicate key "gpu" (first set on line 8)`}},
		"missing required fields": {files: map[string]string{"a.yaml": "kind: inference\nversion: v0.1\njob: {}\n"},
			want: []string{`/repo/a.yaml:1:1: environment: required field is missing`, `/repo/a.yaml:3:6: job.name: required field is missing`}},
		"unknown kind": {files: map[string]string{"a.yaml": "kind: trainning\nversion: v0.1\n"},
			want: []string{`/repo/a.yaml:1:7: kind: unknown kind "trainning", did you mean "training"?`}},
		"unknown version": {files: map[string]string{"a.yaml": strings.Replace(training, "v0.1", "v0.2", 1)},
			want: []string{`/repo/a.yaml:2:10: version: unsupported version "v0.2", the supported version is v0.1`}},
		"missing kind": {files: map[string]string{"a.yaml": "version: v0.1\njob: {name: x}\n"},
			want: []string{`/repo/a.yaml:1:1: kind: required field is missing`}},
		"wrong type": {files: map[string]string{"a.yaml": strings.Replace(training, "gpu: 2", "gpu: two", 1)},
			want: []string{`/repo/a.yaml:8:8: resources.gpu: expected an integer, got "two"`}},
		"quoted integer": {files: map[string]string{"a.yaml": strings.Replace(training, "gpu: 2", `gpu: "2"`, 1)},
			want: []string{`resources.gpu: expected an integer, got "2"`}},
		"negative gpus": {files: map[string]string{"a.yaml": strings.Replace(training, "gpu: 2", "gpu: -1", 1)},
			want: []string{`/repo/a.yaml:8:8: resources.gpu: must be 0 or more, got -1`}},
		"huge number": {files: map[string]string{"a.yaml": strings.Replace(training, "gpu: 2", "gpu: 99999999999999999999999", 1)},
			want: []string{`/repo/a.yaml:8:8: resources.gpu: integer 99999999999999999999999 is out of range`}},
		"bad quantity": {files: map[string]string{"a.yaml": strings.Replace(training, "gpu: 2", "gpu: 2\n  memory: 32GB", 1)},
			want: []string{`/repo/a.yaml:9:11: resources.memory: invalid quantity "32GB"`}},
		"memory without unit": {files: map[string]string{"a.yaml": strings.Replace(training, "gpu: 2", "gpu: 2\n  memory: 32", 1)},
			want: []string{`resources.memory: 32 is 32 bytes, did you mean 32Gi?`}},
		"name too long for svc-": {files: map[string]string{"a.yaml": strings.Replace(training, "name: sft", "name: "+strings.Repeat("a", 60), 1)},
			want: []string{`/repo/a.yaml:4:9: job.name: "` + strings.Repeat("a", 60) + `" is 60 characters long, the limit is 59`}},
		"notebook name limit": {files: map[string]string{"a.yaml": "kind: notebook\nversion: v0.1\njob: {name: " + strings.Repeat("n", 53) + "}\nenvironment: {image: jupyter}\n"},
			want: []string{`is 53 characters long, the limit is 52`}},
		"invalid name": {files: map[string]string{"a.yaml": strings.Replace(training, "name: sft", "name: My_Job", 1)},
			want: []string{`/repo/a.yaml:4:9: job.name: "My_Job" is not a valid name`}},
		"unknown priority": {files: map[string]string{"a.yaml": strings.Replace(training, "name: sft", "name: sft\n  priority: hihg", 1)},
			want: []string{`job.priority: unknown priority "hihg", did you mean "high"?`}},
		"path traversal": {files: map[string]string{"a.yaml": training + "storage:\n  workdirs:\n    - path: /data/../etc/shadow\n"},
			want: []string{`/repo/a.yaml:11:13: storage.workdirs[0].path: "/data/../etc/shadow" must be a clean path without ., .. or //`}},
		"host path outside allow-list": {files: map[string]string{"a.yaml": training + "storage:\n  workdirs:\n    - path: /etc/nginx\n    - path: /datasets2\n"},
			want: []string{`storage.workdirs[0].path: "/etc/nginx" is outside the allowed host paths`, `storage.workdirs[1].path: "/datasets2" is outside the allowed host paths`}},
		"relative host path": {files: map[string]string{"a.yaml": training + "storage:\n  workdirs:\n    - path: data/x\n"},
			want: []string{`storage.workdirs[0].path: "data/x" must be an absolute path`}},
		"gpu-share ignored warning": {valid: true, files: map[string]string{"a.yaml": strings.Replace(training, "gpu: 2", "gpu: 2\n  gpu-share: 2Gi", 1)},
			want: []string{`/repo/a.yaml:9:14: warning: resources.gpu-share: ignored: gpu is 2, and whole GPUs win over a GPU memory share`}},
		"gpu-share not whole GiB": {files: map[string]string{"a.yaml": strings.Replace(training, "gpu: 2", "gpu: 0\n  gpu-share: 1.5Gi", 1)},
			want: []string{`resources.gpu-share: 1536Mi is not a whole number of GiB`}},
		"node_count on inference": {files: map[string]string{"a.yaml": "kind: inference\nversion: v0.1\njob: {name: x}\nenvironment: {image: vllm}\nservice: {port: 8000}\nresources: {node_count: 2}\n"},
			want: []string{`/repo/a.yaml:6:25: resources.node_count: node_count applies to training only`}},
		"inference without port": {files: map[string]string{"a.yaml": "kind: inference\nversion: v0.1\njob: {name: x}\nenvironment: {image: vllm}\n"},
			want: []string{`service.port: required field is missing, an inference service needs the port it listens on`}},
		"port out of range": {files: map[string]string{"a.yaml": "kind: compute\nversion: v0.1\njob: {name: x}\nenvironment: {image: nginx}\nservice: {port: 70000}\n"},
			want: []string{`service.port: port 70000 is out of range 1-65535`}},
		"notebook replicas": {files: map[string]string{"a.yaml": "kind: notebook\nversion: v0.1\njob: {name: x}\nenvironment: {image: j}\nservice: {replicas: 2}\n"},
			want: []string{`service.replicas: a notebook runs exactly 1 replica (0 while paused), got 2`}},
		"suspended training": {valid: true, files: map[string]string{"a.yaml": strings.Replace(training, "name: sft", "name: sft\n  suspend: true", 1)}},
		"suspend not a boolean": {files: map[string]string{"a.yaml": strings.Replace(training, "name: sft", "name: sft\n  suspend: \"yes\"", 1)},
			want: []string{`/repo/a.yaml:5:12: job.suspend: expected true or false, got "yes"`}},
		"suspend on a service": {files: map[string]string{"a.yaml": "kind: compute\nversion: v0.1\njob: {name: x, suspend: true}\nenvironment: {image: j}\n"},
			want: []string{`/repo/a.yaml:3:25: job.suspend: suspend applies to training only`}},
		"paused service":  {valid: true, files: map[string]string{"a.yaml": "kind: compute\nversion: v0.1\njob: {name: x}\nenvironment: {image: j}\nservice: {replicas: 0, pausedReplicas: 3}\n"}},
		"paused notebook": {valid: true, files: map[string]string{"a.yaml": "kind: notebook\nversion: v0.1\njob: {name: x}\nenvironment: {image: j}\nservice: {replicas: 0, paused_replicas: 1}\n"}},
		"paused replicas while running": {files: map[string]string{"a.yaml": "kind: compute\nversion: v0.1\njob: {name: x}\nenvironment: {image: j}\nservice: {replicas: 2, pausedReplicas: 3}\n"},
			want: []string{`/repo/a.yaml:5:40: service.pausedReplicas: set only while the service is paused (service.replicas: 0)`}},
		"paused replicas zero": {files: map[string]string{"a.yaml": "kind: compute\nversion: v0.1\njob: {name: x}\nenvironment: {image: j}\nservice: {replicas: 0, pausedReplicas: 0}\n"},
			want: []string{`service.pausedReplicas: must be 1 or more, got 0`}},
		"paused notebook of 2": {files: map[string]string{"a.yaml": "kind: notebook\nversion: v0.1\njob: {name: x}\nenvironment: {image: j}\nservice: {replicas: 0, pausedReplicas: 2}\n"},
			want: []string{`service.pausedReplicas: a notebook runs exactly 1 replica, got 2`}},
		"paused replicas on training": {files: map[string]string{"a.yaml": training + "service: {pausedReplicas: 2}\n"},
			want: []string{`service.pausedReplicas: training jobs have no service; remove it`}},
		"service on training": {files: map[string]string{"a.yaml": training + "service:\n  port: 80\n"},
			want: []string{`/repo/a.yaml:10:9: service.port: training jobs have no service; remove it`}},
		"duplicate env": {files: map[string]string{"a.yaml": strings.Replace(training, "  image: pytorch/pytorch:2.3.0", "  image: p\n  env:\n    - {name: A, value: 1}\n    - {name: A, value: 2}", 1)},
			want: []string{`environment.env[1].name: environment variable "A" is set twice (also env[0])`}},
		"node in two pools": {files: map[string]string{
			"pools/a.yaml": "kind: pool\nversion: v0.1\nmetadata: {name: a}\nnodes:\n  n1: {gpu-type: A100}\n",
			"pools/b.yaml": "kind: resource\nversion: v0.1\npool: {name: b}\nnodes:\n  n1:\n  n2: {gpuType: T4}\n"},
			want: []string{`/repo/pools/b.yaml:5:3: nodes.n1: node "n1" is already in pool "a" (/repo/pools/a.yaml:5); a node belongs to one pool`}},
		"default pool name reserved": {files: map[string]string{"p.yaml": "kind: pool\nversion: v0.1\nmetadata: {name: default}\n"},
			want: []string{`metadata.name: the pool name default is reserved`}},
		"user in two quotas": {files: map[string]string{
			"q1.yaml": "kind: quota\nversion: v0.1\nmetadata: {name: q1}\nusers:\n  alice: {gpu: 1}\n",
			"q2.yaml": "kind: quota\nversion: v0.1\nmetadata: {name: q2}\nnamespace:\n  alice: {gpu: 2}\n"},
			want: []string{`/repo/q2.yaml:5:3: users.alice: user "alice" already has a quota in /repo/q1.yaml:5`}},
		"system namespace as user": {files: map[string]string{"q.yaml": "kind: quota\nversion: v0.1\nmetadata: {name: q}\nusers:\n  kube-system: {gpu: 1}\n"},
			want: []string{`users.kube-system: "kube-system" is a system namespace and cannot be a quota user`}},
		"team file naming another namespace": {files: map[string]string{
			".gpuctl.yaml":         "namespaces:\n  - path: teams/*/**\n    namespace: $1\n",
			"teams/alice/job.yaml": strings.Replace(training, "name: sft", "name: sft\n  namespace: bob", 1)},
			want: []string{`/repo/teams/alice/job.yaml:5:14: job.namespace: files in teams/alice/ belong to namespace "alice" and cannot place jobs in "bob"`}},
		"quota in team directory": {files: map[string]string{
			".gpuctl.yaml":           "namespaces:\n  - path: teams/*/**\n    namespace: $1\n",
			"teams/alice/quota.yaml": "kind: quota\nversion: v0.1\nmetadata: {name: q}\nusers:\n  alice: {gpu: 100}\n"},
			want: []string{`/repo/teams/alice/quota.yaml:1:7: kind: quota documents are cluster-wide and cannot live in a team directory (teams/alice/)`}},
		"manifest in team directory in another namespace": {files: map[string]string{
			".gpuctl.yaml":        "namespaces:\n  - path: teams/*/**\n    namespace: $1\n",
			"teams/bob/conf.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: alice}\n"},
			want: []string{`/repo/teams/bob/conf.yaml:3:32: metadata.namespace: files in teams/bob/ belong to namespace "bob" and cannot place objects in "alice"`}},
		"same object twice": {files: map[string]string{"a.yaml": training, "b.yaml": training},
			want: []string{`/repo/b.yaml:1:1: Job default/sft is rendered twice: also from /repo/a.yaml:1`}},
		"tab indentation": {files: map[string]string{"a.yaml": "kind: training\nversion: v0.1\njob:\n\tname: x\n"},
			want: []string{`/repo/a.yaml:4: invalid YAML: found character that cannot start any token, line 4 holds a tab; YAML indents with spaces only`}},
		"malformed yaml": {files: map[string]string{"a.yaml": "kind: training\njob: [unclosed\n"},
			want: []string{`/repo/a.yaml:`, `invalid YAML`}},
		"binary file": {files: map[string]string{"a.yaml": "kind: \x00\x01\x02"},
			want: []string{`/repo/a.yaml: not a text file (binary or not UTF-8)`}},
		"file too large": {files: map[string]string{"a.yaml": strings.Repeat("# padding\n", 1<<20)},
			want: []string{`/repo/a.yaml: file is too large (10.0 MiB, the limit is 1.0 MiB)`}},
		"manifest read as YAML 1.2": {valid: true, files: map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: y}\ndata: {on: yes}\n"}},
		"manifest without a string name": {files: map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: 12}\n"},
			want: []string{`/repo/cm.yaml:1:1: metadata.name: a Kubernetes manifest needs a non-empty string metadata.name`}},
		"pool not declared warning": {valid: true, files: map[string]string{
			"p.yaml": "kind: pool\nversion: v0.1\nmetadata: {name: train}\nnodes:\n  n1: {gpu-type: A100-80G}\n",
			"a.yaml": strings.Replace(training, "gpu: 2", "gpu: 2\n  pool: trian\n  gpu-type: H100", 1)},
			want: []string{`/repo/a.yaml:9:9: warning: resources.pool: no pool file in this tree declares pool "trian"`}},
	}
	checkRuleCases(t, cases)
}

// checkRuleCases renders each case and checks that its diagnostics hold every wanted one.
func checkRuleCases(t *testing.T, cases map[string]ruleCase) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res, err := renderFiles(t, tc.files)
			var got []string
			for _, d := range res.Diagnostics {
				got = append(got, d.Error())
			}
			if tc.valid && err != nil {
				t.Fatalf("expected valid, got:\n%v", err)
			}
			if !tc.valid && err == nil {
				t.Fatalf("expected an error, got none (diagnostics: %q)", got)
			}
			for _, w := range tc.want {
				if !containsAny(got, w) {
					t.Errorf("no diagnostic contains\n  %s\ngot:\n  %s", w, strings.Join(got, "\n  "))
				}
			}
		})
	}
}

func containsAny(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// TestAllErrorsOfAllFiles: problems in several files are all reported, in file order.
func TestAllErrorsOfAllFiles(t *testing.T) {
	res, err := renderFiles(t, map[string]string{
		"a.yaml": strings.Replace(training, "gpu: 2", "gpu: -1\n  cpu: lots", 1),
		"b.yaml": "kind: nope\nversion: v0.1\n",
		"c.yaml": training + "storage: {workdirs: [{path: /etc}]}\n",
	})
	if err == nil {
		t.Fatal("expected errors")
	}
	var ve *render.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error is %T, want *render.ValidationError", err)
	}
	var files []string
	for _, d := range ve.Diagnostics() {
		files = append(files, path.Base(d.File))
	}
	want := []string{"a.yaml", "a.yaml", "b.yaml", "c.yaml"}
	if strings.Join(files, ",") != strings.Join(want, ",") || !sort.StringsAreSorted(files) {
		t.Fatalf("diagnostics from files %v, want %v:\n%v", files, want, err)
	}
	if len(res.Objects) != 0 {
		t.Fatalf("an invalid tree rendered %d objects; want none", len(res.Objects))
	}
	if !strings.HasPrefix(err.Error(), "4 errors:\n") {
		t.Fatalf("error text starts %q", strings.SplitN(err.Error(), "\n", 2)[0])
	}
	if _, err := renderFiles(t, map[string]string{"b.yaml": "kind: nope\nversion: v0.1\n"}); err == nil || !strings.HasPrefix(err.Error(), "1 error:\n") {
		t.Fatalf("one problem: %v, want an error text starting \"1 error:\"", err)
	}
}
