package review

import (
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/internal/keys"
)

// TestSecretRefLinesAreNoChange: render records the lines of a workload's Secret references
// (keys.SecretRefs), which the engine takes off and never applies: a line added above them
// changes no object in a review, and an added workload's YAML does not show them.
func TestSecretRefLinesAreNoChange(t *testing.T) {
	job := "kind: training\nversion: v0.1\njob: {name: sft}\nenvironment:\n  image: pytorch\n  env:\n" +
		"    - {name: HF_TOKEN, secret: {name: hf-token, key: token}}\n"
	base := &Revision{Name: "base", Files: map[string]string{"train.yaml": job}}
	head := &Revision{Name: "head", Files: map[string]string{"train.yaml": "# fine-tuning\n" + job}}
	rep, err := Compose(base, head, ".")
	if err != nil {
		t.Fatal(err)
	}
	if rep.HasChanges() {
		t.Fatalf("a comment line is a change: %+v", rep.Changes[0].Fields)
	}
	rep, err = Compose(&Revision{Name: "base", Files: map[string]string{}}, head, ".")
	if err != nil {
		t.Fatal(err)
	}
	if md := Markdown(rep, MarkdownOptions{}); strings.Contains(md, keys.SecretRefs) || !strings.Contains(md, "hf-token") {
		t.Fatalf("the added Job's YAML shows %s, or not its Secret:\n%s", keys.SecretRefs, md)
	}
}
