package app

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/cluster"
)

func TestPrintEvents(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	list := cluster.EventList{Items: []cluster.Event{
		{LastSeen: now.Add(-12 * time.Minute), FirstSeen: now.Add(-12 * time.Minute), Type: "Normal", Reason: "SuccessfulCreate",
			JobID: "alice.sft", Namespace: "alice", Object: "job/sft", Message: "Created pod: sft-0-x7k2p", Count: 1},
		{LastSeen: now.Add(-30 * time.Second), FirstSeen: now.Add(-11 * time.Minute), Type: "Warning", Reason: "FailedScheduling",
			JobID: "alice.sft", Namespace: "alice", Object: "pod/sft-0-x7k2p",
			Message: "0/5 nodes are available: 5 Insufficient nvidia.com/gpu.\n  preemption: not helpful", Count: 4},
	}}
	var out, errOut bytes.Buffer
	if err := printEvents(Streams{Out: &out, Err: &errOut}, list, "text", false, now); err != nil {
		t.Fatal(err)
	}
	want := `LAST SEEN           TYPE      REASON             OBJECT            MESSAGE
12m                 Normal    SuccessfulCreate   job/sft           Created pod: sft-0-x7k2p
30s (x4 over 11m)   Warning   FailedScheduling   pod/sft-0-x7k2p   0/5 nodes are available: 5 Insufficient nvidia.com/gpu. preemption: not helpful
`
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
	out.Reset()
	_ = printEvents(Streams{Out: &out, Err: &errOut}, list, "text", true, now)
	if !strings.HasPrefix(out.String(), "NAMESPACE   LAST SEEN") || !strings.Contains(out.String(), "\nalice       12m ") {
		t.Errorf("with -A:\n%s", out.String())
	}
	out.Reset()
	_ = printEvents(Streams{Out: &out, Err: &errOut}, cluster.EventList{Items: []cluster.Event{}}, "text", false, now)
	if out.String() != "" || errOut.String() != "No events.\n" {
		t.Errorf("no events: out %q, err %q", out.String(), errOut.String())
	}
	out.Reset()
	_ = printEvents(Streams{Out: &out, Err: &errOut}, list, "json", false, now)
	if !strings.Contains(out.String(), `"reason": "FailedScheduling"`) || !strings.HasPrefix(out.String(), "{\n  \"items\": [") {
		t.Errorf("json:\n%s", out.String())
	}
}

func TestEventsNeedsAJobANamespaceOrAll(t *testing.T) {
	for _, args := range [][]string{{"events"}, {"events", "sft", "-A"}} {
		var out, errOut bytes.Buffer
		cmd := NewRootCommand(Streams{Out: &out, Err: &errOut})
		cmd.SetArgs(append(args, "--kubeconfig", "/nonexistent"))
		if err := cmd.Execute(); Code(err) != ExitTrouble || !strings.Contains(err.Error(), "name a JOB") {
			t.Errorf("%v: %v (exit %d)", args, err, Code(err))
		}
	}
}

func TestLogPainter(t *testing.T) {
	if p := logPainter(&bytes.Buffer{}, "auto"); p != nil {
		t.Error("a buffer is not a terminal: the prefixes must stay plain")
	}
	p := logPainter(&bytes.Buffer{}, "always")
	a, b := p("[rank-0]"), p("[rank-0]")
	if a != b || !strings.HasPrefix(a, "\x1b[") || !strings.Contains(a, "[rank-0]") {
		t.Errorf("painted %q and %q", a, b)
	}
	seen := map[string]bool{}
	for i := range 8 {
		seen[p(cluster.LogLine{Prefix: "rank-" + string(rune('0'+i))}.Format(nil))[:5]] = true
	}
	if len(seen) < 3 {
		t.Errorf("8 ranks got %d colours", len(seen))
	}
}

func TestJobID(t *testing.T) {
	for in, want := range map[[2]string]string{{"", "sft"}: "sft", {"alice", "sft"}: "alice.sft", {"alice", "bob.sft"}: "bob.sft"} {
		if got := jobID(in[0], in[1]); got != want {
			t.Errorf("jobID(%q, %q) = %q, want %q", in[0], in[1], got, want)
		}
	}
}

// TestTablesEscapeControlCharacters: an event message and reason that a team's object carries
// with terminal escapes (clear screen, recolour; a carriage return folds to a space) print as visible escapes in
// gpuctl events, and the columns stay aligned; -o json keeps the text as it is.
func TestTablesEscapeControlCharacters(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	list := cluster.EventList{Items: []cluster.Event{{LastSeen: now, FirstSeen: now, Type: "Normal",
		Reason: "Ok\x1b[2J", Object: "pod/p", Message: "all good\r\x1b[31mFAILED", Count: 1}}}
	var out, errOut bytes.Buffer
	if err := printEvents(Streams{Out: &out, Err: &errOut}, list, "", false, now); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(out.String(), "\x1b\r") || !strings.Contains(out.String(), `all good \x1b[31mFAILED`) || !strings.Contains(out.String(), `Ok\x1b[2J`) {
		t.Errorf("a control character reached the terminal:\n%q", out.String())
	}
	lines := strings.Split(out.String(), "\n")
	if strings.Index(lines[0], "OBJECT") != strings.Index(lines[1], "pod/p") {
		t.Errorf("columns misaligned:\n%s", out.String())
	}
	out.Reset()
	_ = printEvents(Streams{Out: &out, Err: &errOut}, list, "json", false, now)
	if !strings.Contains(out.String(), `all good\r\u001b[31mFAILED`) {
		t.Errorf("json changed the message:\n%s", out.String())
	}
}
