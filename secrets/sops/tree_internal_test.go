package sops

import (
	"bytes"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// trickyScalars are values whose YAML spelling depends on how they are styled.
var trickyScalars = []any{
	"", "plain", "42", "-1", "0x1F", "1e3", ".inf", "true", "True", "false", "null", "~", "yes", "No", "on", "OFF", "y",
	"1:20", "-1:30:00", "2026-11-29", "2026-11-29T01:00:00Z", "rotated: 2026-11-01", "a: b", "#not a comment",
	"a #b", "- item", "[x]", "{x}", "*alias", "&anchor", "!tag", "%directive", "@at", "`tick", "'single'", `"double"`,
	"trailing ", " leading", "tab\there", "multi\nline", "multi\nline\n", "trailing space\nline \n", "\n", "ünïcödé",
	"ENC[AES256_GCM,data:abc=,iv:def=,tag:ghi=,type:str]", "\x01control", "---", "...", "? q", ": c", "a,b", "<<",
	"=", "\\backslash", "0o17", "+12", "1_000", "0.", ".5", "-.inf", ".NaN",
	42, -7, true, false, nil, 0.25, 1e10, time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC), "\xff\xfe invalid utf-8",
}

// encodeNode is the node that yaml.v3 makes of a value (what sops writes).
func encodeNode(t *testing.T, v any) *yaml.Node {
	t.Helper()
	n := &yaml.Node{}
	if err := n.Encode(v); err != nil {
		t.Fatal(err)
	}
	return n
}

// emit writes a document of key: value pairs, block and flow.
func emit(t *testing.T, pairs []*yaml.Node) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(yamlIndent)
	m := &yaml.Node{Kind: yaml.MappingNode, Content: pairs}
	seq := &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{pairs[1]}}
	doc := &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode, Content: []*yaml.Node{
		{Kind: yaml.ScalarNode, Value: "m"}, m, {Kind: yaml.ScalarNode, Value: "s"}, seq,
	}}}}
	if err := enc.Encode(doc); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestValueNodeWritesWhatYamlV3Writes: valueNode builds scalars without yaml.v3's costly
// Node.Encode, and writes each value, as a key and as a value, byte for byte as
// Node.Encode's node does (as sops writes it).
func TestValueNodeWritesWhatYamlV3Writes(t *testing.T) {
	for _, v := range trickyScalars {
		got, err := valueNode(v)
		if err != nil {
			t.Fatal(err)
		}
		want := encodeNode(t, v)
		pairs := func(n *yaml.Node) []*yaml.Node {
			if _, isString := v.(string); isString {
				return []*yaml.Node{n, n}
			}
			return []*yaml.Node{{Kind: yaml.ScalarNode, Value: "k"}, n}
		}
		if g, w := emit(t, pairs(got)), emit(t, pairs(want)); !bytes.Equal(g, w) {
			t.Errorf("%q:\n got %s\nwant %s", v, g, w)
		}
	}
}

// FuzzStringNode checks stringNode against yaml.v3's Node.Encode on any string.
func FuzzStringNode(f *testing.F) {
	for _, v := range trickyScalars {
		if s, ok := v.(string); ok {
			f.Add(s)
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := valueNode(s)
		if err != nil {
			t.Fatal(err)
		}
		want := &yaml.Node{}
		if err := want.Encode(s); err != nil {
			t.Skip()
		}
		if g, w := emit(t, []*yaml.Node{got, got}), emit(t, []*yaml.Node{want, want}); !bytes.Equal(g, w) {
			t.Errorf("%q:\n got %s\nwant %s", s, g, w)
		}
	})
}
