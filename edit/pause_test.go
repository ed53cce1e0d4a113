package edit_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/edit"
)

// editCase is a file, an edit of the job in it, and the file expected after: byte for byte,
// so every line the edit does not touch (comments, quotes, flow style, anchors, CRLF, other
// documents) is checked to stay as written.
type editCase struct {
	in, want string
}

const sftHead = "# Fine-tuning run, owned by alice.\nkind: training\nversion: v0.1\n"

func TestPauseTraining(t *testing.T) {
	cases := map[string]editCase{
		"block job, comments and quotes kept": {
			in:   sftHead + "job:\n  name: sft   # keep this comment\n  priority: 'high'\n  description: \"a: b # not a comment\"\nenvironment:\n  image: \"pytorch/pytorch:2.3.0\"  # pinned\n  env: [{name: A, value: \"1\"}, {name: B, value: '2'}]\n",
			want: sftHead + "job:\n  name: sft   # keep this comment\n  suspend: true\n  priority: 'high'\n  description: \"a: b # not a comment\"\nenvironment:\n  image: \"pytorch/pytorch:2.3.0\"  # pinned\n  env: [{name: A, value: \"1\"}, {name: B, value: '2'}]\n",
		},
		"indented by four": {
			in:   "kind: training\nversion: v0.1\njob:\n    name: sft\nenvironment:\n    image: x\n",
			want: "kind: training\nversion: v0.1\njob:\n    name: sft\n    suspend: true\nenvironment:\n    image: x\n",
		},
		"flow job": {
			in:   "kind: training\nversion: v0.1\njob: {name: sft, priority: high}\nenvironment: {image: x}\n",
			want: "kind: training\nversion: v0.1\njob: {suspend: true, name: sft, priority: high}\nenvironment: {image: x}\n",
		},
		"suspend false written": {
			in:   "kind: training\nversion: v0.1\njob:\n  name: sft\n  suspend: false # was paused once\nenvironment: {image: x}\n",
			want: "kind: training\nversion: v0.1\njob:\n  name: sft\n  suspend: true # was paused once\nenvironment: {image: x}\n",
		},
		"name quoted, no final newline": {
			in:   "kind: training\nversion: v0.1\nenvironment: {image: x}\njob:\n  name: \"sft\"",
			want: "kind: training\nversion: v0.1\nenvironment: {image: x}\njob:\n  name: \"sft\"\n  suspend: true",
		},
		"CRLF": {
			in:   "kind: training\r\nversion: v0.1\r\njob:\r\n  name: sft\r\nenvironment:\r\n  image: x\r\n",
			want: "kind: training\r\nversion: v0.1\r\njob:\r\n  name: sft\r\n  suspend: true\r\nenvironment:\r\n  image: x\r\n",
		},
		"multi-document, comments between documents": {
			in:   "# one\nkind: compute\nversion: v0.1\njob: {name: web}\nenvironment: {image: y}\n---\n# two: the run\nkind: training\nversion: v0.1\njob:\n  name: sft\nenvironment: {image: x}\n--- # three\nkind: compute\nversion: v0.1\njob: {name: db}\nenvironment: {image: z}\n",
			want: "# one\nkind: compute\nversion: v0.1\njob: {name: web}\nenvironment: {image: y}\n---\n# two: the run\nkind: training\nversion: v0.1\njob:\n  name: sft\n  suspend: true\nenvironment: {image: x}\n--- # three\nkind: compute\nversion: v0.1\njob: {name: db}\nenvironment: {image: z}\n",
		},
		"anchors elsewhere kept": {
			in:   "kind: training\nversion: v0.1\njob:\n  name: sft\nenvironment: &env\n  image: x\n  env: &vars [{name: A, value: b}]\nstorage:\n  workdirs: []\n",
			want: "kind: training\nversion: v0.1\njob:\n  name: sft\n  suspend: true\nenvironment: &env\n  image: x\n  env: &vars [{name: A, value: b}]\nstorage:\n  workdirs: []\n",
		},
		"unicode before the name": {
			in:   "kind: training\nversion: v0.1\njob:\n  description: \"été — 训练\"\n  name: sft\nenvironment: {image: x}\n",
			want: "kind: training\nversion: v0.1\njob:\n  description: \"été — 训练\"\n  name: sft\n  suspend: true\nenvironment: {image: x}\n",
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			r := memRepo(t, map[string]string{"sft.yaml": c.in})
			ch := oneChange(t)(r.Pause(edit.JobRef{Name: "sft"}))
			if ch.Path != "sft.yaml" || ch.Action != edit.Modified || string(ch.Old) != c.in {
				t.Fatalf("change %s %s", ch.Action, ch.Path)
			}
			if string(ch.New) != c.want {
				t.Fatalf("got:\n%s\nwant:\n%s", ch.New, c.want)
			}
			// Resume gives back the file as it was, when pause added the field.
			if strings.Contains(c.in, "suspend") {
				return
			}
			r = memRepo(t, map[string]string{"sft.yaml": string(ch.New)})
			back := oneChange(t)(r.Resume(edit.JobRef{Name: "sft"}))
			if string(back.New) != c.in {
				t.Fatalf("resume: got:\n%s\nwant:\n%s", back.New, c.in)
			}
		})
	}
}

func TestPauseService(t *testing.T) {
	cases := map[string]editCase{
		"replicas written": {
			in:   "kind: inference\nversion: v0.1\njob: {name: chat}\nenvironment: {image: v}\nservice:\n  port: 8000\n  replicas: 3   # three GPUs\n  health_check: /health\n",
			want: "kind: inference\nversion: v0.1\njob: {name: chat}\nenvironment: {image: v}\nservice:\n  port: 8000\n  replicas: 0   # three GPUs\n  pausedReplicas: 3\n  health_check: /health\n",
		},
		"replicas not written": {
			in:   "kind: inference\nversion: v0.1\njob: {name: chat}\nenvironment: {image: v}\nservice:\n  port: 8000\nresources:\n  gpu: 1\n",
			want: "kind: inference\nversion: v0.1\njob: {name: chat}\nenvironment: {image: v}\nservice:\n  port: 8000\n  replicas: 0\n  pausedReplicas: 1\nresources:\n  gpu: 1\n",
		},
		"flow service": {
			in:   "kind: inference\nversion: v0.1\njob: {name: chat}\nenvironment: {image: v}\nservice: {port: 8000, replicas: 2}\n",
			want: "kind: inference\nversion: v0.1\njob: {name: chat}\nenvironment: {image: v}\nservice: {pausedReplicas: 2, port: 8000, replicas: 0}\n",
		},
		"no service block, comments at the end": {
			in:   "kind: compute\nversion: v0.1\njob:\n  name: chat\nenvironment:\n    image: v\n\n# the end\n---\nkind: compute\nversion: v0.1\njob: {name: other}\nenvironment: {image: v}\n",
			want: "kind: compute\nversion: v0.1\njob:\n  name: chat\nenvironment:\n    image: v\nservice:\n  replicas: 0\n  pausedReplicas: 1\n\n# the end\n---\nkind: compute\nversion: v0.1\njob: {name: other}\nenvironment: {image: v}\n",
		},
		"notebook": {
			in:   "kind: notebook\nversion: v0.1\njob: {name: chat}\nenvironment: {image: j}\nservice:\n  port: 8888\n",
			want: "kind: notebook\nversion: v0.1\njob: {name: chat}\nenvironment: {image: j}\nservice:\n  port: 8888\n  replicas: 0\n  pausedReplicas: 1\n",
		},
		"merged service keeps its anchor source": {
			in:   "kind: compute\nversion: v0.1\njob: {name: base}\nenvironment: {image: v}\nservice: &svc {replicas: 2}\n---\nkind: compute\nversion: v0.1\njob: {name: chat}\nenvironment: {image: v}\nservice:\n  <<: *svc\n  port: 80\n",
			want: "kind: compute\nversion: v0.1\njob: {name: base}\nenvironment: {image: v}\nservice: &svc {replicas: 2}\n---\nkind: compute\nversion: v0.1\njob: {name: chat}\nenvironment: {image: v}\nservice:\n  <<: *svc\n  port: 80\n  replicas: 0\n  pausedReplicas: 2\n",
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			r := memRepo(t, map[string]string{"chat.yaml": c.in})
			ch := oneChange(t)(r.Pause(edit.JobRef{Name: "chat"}))
			if string(ch.New) != c.want {
				t.Fatalf("got:\n%s\nwant:\n%s", ch.New, c.want)
			}
			r = memRepo(t, map[string]string{"chat.yaml": string(ch.New)})
			back := oneChange(t)(r.Resume(edit.JobRef{Name: "chat"}))
			if !strings.Contains(string(back.New), "replicas: ") || strings.Contains(string(back.New), "pausedReplicas") {
				t.Fatalf("resume:\n%s", back.New)
			}
			if strings.Contains(c.in, "replicas: 3") && string(back.New) != c.in {
				t.Fatalf("resume: got:\n%s\nwant:\n%s", back.New, c.in)
			}
		})
	}
}

func TestPauseRefusals(t *testing.T) {
	svc := "kind: compute\nversion: v0.1\njob: {name: chat}\nenvironment: {image: v}\n"
	cases := map[string]struct {
		files map[string]string
		job   string
		pause bool
		check func(error) bool
		msg   string
	}{
		"already paused": {files: map[string]string{"a.yaml": sftHead + "job: {name: sft, suspend: true}\nenvironment: {image: x}\n"}, job: "sft", pause: true,
			check: is[*edit.UnchangedError], msg: "training default.sft is already paused: nothing to change"},
		"not paused": {files: map[string]string{"a.yaml": svc}, job: "chat",
			check: is[*edit.UnchangedError], msg: "compute default.chat is not paused: nothing to change"},
		"scaled to 0 by hand": {files: map[string]string{"a.yaml": svc + "service: {replicas: 0}\n"}, job: "chat",
			check: is[*edit.CannotEditError], msg: "a.yaml:5: service.pausedReplicas: cannot edit: default.chat was not paused by gpuctl pause"},
		"shared block": {files: map[string]string{"a.yaml": svc + "service: &s\n  replicas: 2\n---\nkind: compute\nversion: v0.1\njob: {name: other}\nenvironment: {image: v}\nservice: *s\n"}, job: "chat", pause: true,
			check: is[*edit.CannotEditError], msg: "a.yaml:5: service: cannot edit: it is shared through the anchor &s (used on line 12)"},
		"aliased block": {files: map[string]string{"a.yaml": svc + "service: &s\n  replicas: 2\n---\nkind: compute\nversion: v0.1\njob: {name: other}\nenvironment: {image: v}\nservice: *s\n"}, job: "other", pause: true,
			check: is[*edit.CannotEditError], msg: "a.yaml:12: service: cannot edit: it is an alias (*s)"},
		"block scalar value": {files: map[string]string{"a.yaml": svc + "service:\n  replicas: !!int\n    2\n"}, job: "chat", pause: true,
			check: is[*edit.CannotEditError], msg: "cannot edit: the value is written over several lines"},
		"unknown job": {files: map[string]string{"a.yaml": svc}, job: "nope", pause: true,
			check: is[*edit.NotFoundError], msg: `no file of the repository declares job "nope"`},
		"ambiguous": {files: map[string]string{".gpuctl.yaml": teamConfig, "teams/alice/a.yaml": svc, "teams/bob/a.yaml": svc}, job: "chat", pause: true,
			check: is[*edit.AmbiguousError], msg: `job name "chat" is ambiguous: it is declared in alice (teams/alice/a.yaml), bob (teams/bob/a.yaml); name one with -n NAMESPACE or as NAMESPACE.chat`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			r := memRepo(t, c.files)
			var err error
			if c.pause {
				_, err = r.Pause(edit.ParseJobRef(c.job, ""))
			} else {
				_, err = r.Resume(edit.ParseJobRef(c.job, ""))
			}
			if err == nil || !c.check(err) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("got %T %v\nwant %s", err, err, c.msg)
			}
		})
	}
	// With -n the ambiguity is gone.
	r := memRepo(t, map[string]string{".gpuctl.yaml": teamConfig, "teams/alice/a.yaml": svc, "teams/bob/a.yaml": svc})
	ch := oneChange(t)(r.Pause(edit.ParseJobRef("chat", "bob")))
	if ch.Path != "teams/bob/a.yaml" {
		t.Fatalf("paused %s", ch.Path)
	}
}

// is reports whether err is or wraps a T.
func is[T error](err error) bool {
	var target T
	return errors.As(err, &target)
}
