package edit_test

import (
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/edit"
)

func TestScale(t *testing.T) {
	head := "kind: inference\nversion: v0.1\njob: {name: chat}\nenvironment: {image: v}\n"
	cases := map[string]struct {
		kind, in, want string
		n              int
	}{
		"replicas written": {kind: "inference", n: 3,
			in:   head + "service:\n  port: 8000\n  replicas: 1 # one for now\n",
			want: head + "service:\n  port: 8000\n  replicas: 3 # one for now\n"},
		"anchored value keeps its anchor": {kind: "inference", n: 4,
			in:   head + "service:\n  port: 8000\n  replicas: &n 2\n",
			want: head + "service:\n  port: 8000\n  replicas: &n 4\n"},
		"replicas not written": {kind: "inference", n: 2,
			in:   head + "service:\n  port: 8000\n",
			want: head + "service:\n  port: 8000\n  replicas: 2\n"},
		"paused service resumes": {kind: "inference", n: 5,
			in:   head + "service: {port: 8000, replicas: 0, pausedReplicas: 2}\n",
			want: head + "service: {port: 8000, replicas: 5}\n"},
		"compute without a service block": {kind: "compute", n: 0,
			in:   "kind: compute\nversion: v0.1\njob:\n  name: chat\nenvironment:\n  image: v\n",
			want: "kind: compute\nversion: v0.1\njob:\n  name: chat\nenvironment:\n  image: v\nservice:\n  replicas: 0\n"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			r := memRepo(t, map[string]string{"chat.yaml": c.in})
			res, err := r.Scale(c.kind, edit.JobRef{Name: "chat"}, c.n)
			ch := oneChange(t)(res, err)
			if string(ch.New) != c.want || res.Replicas != c.n {
				t.Fatalf("got:\n%s\nwant:\n%s", ch.New, c.want)
			}
		})
	}
}

func TestScaleRefusals(t *testing.T) {
	files := map[string]string{
		"a.yaml": "kind: inference\nversion: v0.1\njob: {name: chat}\nenvironment: {image: v}\nservice: {port: 80, replicas: 2}\n",
		"b.yaml": "kind: notebook\nversion: v0.1\njob: {name: lab}\nenvironment: {image: j}\n",
		"c.yaml": "kind: training\nversion: v0.1\njob: {name: sft}\nenvironment: {image: t}\n",
	}
	cases := map[string]struct {
		kind, job string
		n         int
		msg       string
	}{
		"same count":            {"inference", "chat", 2, "inference default.chat already has 2 replicas: nothing to change"},
		"wrong kind":            {"compute", "chat", 3, "job default.chat is of kind inference, not compute (a.yaml)"},
		"training":              {"training", "chat", 3, `cannot scale "training"`},
		"negative":              {"inference", "chat", -1, "--replicas -1: must be 0 or more"},
		"notebook of 2 invalid": {"notebook", "lab", 2, "b.yaml:6:13: service.replicas: a notebook runs exactly 1 replica (0 while paused), got 2"},
		"any kind, a training":  {"", "sft", 2, "cannot scale training job default.sft (c.yaml): only inference, compute and notebook services have replicas"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := memRepo(t, files).Scale(c.kind, edit.JobRef{Name: c.job}, c.n)
			if err == nil || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("got %v\nwant %s", err, c.msg)
			}
		})
	}
}

// TestScaleAnyKind: kind "" scales whichever service the job is, as the daemon's API does.
func TestScaleAnyKind(t *testing.T) {
	r := memRepo(t, map[string]string{"a.yaml": "kind: inference\nversion: v0.1\njob: {name: chat}\nenvironment: {image: v}\nservice: {port: 80, replicas: 2}\n"})
	ch := oneChange(t)(r.Scale("", edit.JobRef{Name: "chat"}, 3))
	if !strings.Contains(string(ch.New), "replicas: 3}") {
		t.Fatalf("got:\n%s", ch.New)
	}
}
