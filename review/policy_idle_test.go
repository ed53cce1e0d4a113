package review

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/usage"
)

// TestParsePolicyIdle: the idle rules of gpuctl-policy.yaml are read with their defaults, the
// first rule that matches a job is its rule, and each bad field is an error naming the file,
// the line of the field and the rule.
func TestParsePolicyIdle(t *testing.T) {
	good := `version: v0.1
idle:
  - name: notebooks
    threshold: 10
    for: 2h
    warnBefore: 30m
    action: pause
    teams: [alice, bob]
    kinds: [notebook]
  - for: 6h
`
	p, err := ParsePolicy(PolicyFile, []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Idle) != 2 {
		t.Fatalf("rules: %+v", p.Idle)
	}
	nb, rest := p.Idle[0], p.Idle[1]
	if nb.Name != "notebooks" || nb.Threshold != 10 || nb.For != 2*time.Hour || nb.WarnBefore != 30*time.Minute || nb.Action != IdlePause {
		t.Errorf("first rule: %+v", nb)
	}
	if rest.Name != "idle[1]" || rest.Threshold != usage.DefaultIdleThreshold || rest.Action != IdleReport || rest.WarnBefore != 0 {
		t.Errorf("defaults of the second rule: %+v", rest)
	}
	for _, c := range []struct{ ns, kind, want string }{
		{"alice", "notebook", "notebooks"}, {"bob", "notebook", "notebooks"},
		{"alice", "training", "idle[1]"}, {"carol", "notebook", "idle[1]"},
	} {
		if got := p.IdleRuleFor(c.ns, c.kind); got == nil || got.Name != c.want {
			t.Errorf("%s %s: rule %+v, want %s", c.ns, c.kind, got, c.want)
		}
	}
	only, err := ParsePolicy(PolicyFile, []byte("version: v0.1\nidle:\n  - {for: 1h, kinds: [training]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if r := only.IdleRuleFor("alice", "notebook"); r != nil {
		t.Errorf("a notebook matched a training rule: %+v", r)
	}
	if r := (*Policy)(nil).IdleRuleFor("alice", "notebook"); r != nil {
		t.Errorf("no policy: %+v", r)
	}

	cases := map[string]struct {
		in   string
		want []string
	}{
		"for missing": {in: "  - name: nb\n    action: pause\n",
			want: []string{"gpuctl-policy.yaml:3: idle[0].for: required"}},
		"for unparsable": {in: "  - for: 2 hours\n",
			want: []string{"gpuctl-policy.yaml:3: cannot unmarshal !!str `2 hours` into time.Duration"}},
		"for too short": {in: "  - for: 10s\n", want: []string{"gpuctl-policy.yaml:3: idle[0].for: 10s is less than a minute"}},
		"warnBefore not below for": {in: "  - for: 1h\n    warnBefore: 2h\n",
			want: []string{"gpuctl-policy.yaml:4: idle[0].warnBefore: 2h0m0s must be 0 (no warning) or more, and less than for (1h0m0s)"}},
		"warnBefore negative": {in: "  - for: 1h\n    warnBefore: -5m\n", want: []string{"gpuctl-policy.yaml:4: idle[0].warnBefore: -5m0s"}},
		"threshold zero": {in: "  - for: 1h\n    threshold: 0\n",
			want: []string{"gpuctl-policy.yaml:4: idle[0].threshold: 0 is not a utilization in percent above 0 and at most 100"}},
		"threshold above 100":    {in: "  - for: 1h\n    threshold: 150\n", want: []string{"gpuctl-policy.yaml:4: idle[0].threshold: 150 is not"}},
		"threshold NaN":          {in: "  - for: 1h\n    threshold: .nan\n", want: []string{"gpuctl-policy.yaml:4: idle[0].threshold: NaN is not"}},
		"threshold not a number": {in: "  - for: 1h\n    threshold: low\n", want: []string{"gpuctl-policy.yaml:4: cannot unmarshal !!str `low` into float64"}},
		"action":                 {in: "  - for: 1h\n    action: delete\n", want: []string{`gpuctl-policy.yaml:4: idle[0].action: "delete" is not report or pause`}},
		"kind": {in: "  - for: 1h\n  - for: 2h\n    kinds: [notebook, jupyter]\n",
			want: []string{`gpuctl-policy.yaml:5: idle[1].kinds: "jupyter" is not a job kind (training, inference, notebook, compute)`}},
		"team":          {in: "  - for: 1h\n    teams: [Alice_Team]\n", want: []string{`gpuctl-policy.yaml:4: idle[0].teams: "Alice_Team" is not a namespace`}},
		"unknown field": {in: "  - for: 1h\n    window: 3h\n", want: []string{"gpuctl-policy.yaml:4: field window not found"}},
		"duplicate name": {in: "  - {name: nb, for: 1h}\n  - {name: nb, for: 2h}\n",
			want: []string{`gpuctl-policy.yaml:4: idle[1].name: "nb" is also the name of idle[0]`}},
		"several at once": {in: "  - for: 1h\n    action: stop\n    kinds: [gpu]\n",
			want: []string{`gpuctl-policy.yaml:4: idle[0].action: "stop"`, `gpuctl-policy.yaml:5: idle[0].kinds: "gpu"`}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ParsePolicy(PolicyFile, []byte("version: v0.1\nidle:\n"+tc.in))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}
