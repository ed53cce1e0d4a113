package edit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/edit"
)

// TestEditsRenderWithinTheirDeadline: every edit renders the tree within Repo.RenderTimeout —
// the files of a team may be written to make a render slow — and one that runs out of time
// changes nothing and says so.
func TestEditsRenderWithinTheirDeadline(t *testing.T) {
	r := memRepo(t, map[string]string{
		".gpuctl.yaml":         teamConfig,
		"teams/alice/sft.yaml": "kind: training\nversion: v0.1\njob: {name: sft}\nenvironment: {image: x}\n",
	})
	r.RenderTimeout = time.Nanosecond
	for name, do := range map[string]func() (*edit.Result, error){
		"delete": func() (*edit.Result, error) { return r.Delete(edit.JobRef{Name: "sft"}) },
		"pause":  func() (*edit.Result, error) { return r.Pause(edit.JobRef{Name: "sft"}) },
		"create": func() (*edit.Result, error) {
			return r.Create([]edit.File{{Name: "new.yaml", Data: []byte("kind: training\nversion: v0.1\njob: {name: new}\nenvironment: {image: x}\n")}},
				edit.CreateOptions{Team: "alice"})
		},
	} {
		if res, err := do(); !errors.Is(err, context.DeadlineExceeded) || res != nil {
			t.Errorf("%s with a render timeout of 1ns: %v, %v; want the deadline's error and no result", name, res, err)
		}
	}
	r.RenderTimeout = 0 // DefaultRenderTimeout
	if _, err := r.Pause(edit.JobRef{Name: "sft"}); err != nil {
		t.Errorf("pause with the default render timeout: %v", err)
	}
}
