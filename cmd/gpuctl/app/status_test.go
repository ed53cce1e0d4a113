package app

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/internal/humanize"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
)

// TestStatusReadsAsAPersonWrites: gpuctl status rounds the sync's duration, prints its age as
// kubectl prints ages, and shortens the revision.
func TestStatusReadsAsAPersonWrites(t *testing.T) {
	st := daemon.Status{Source: "git https://example.com/gpus.git", Result: daemon.ResultSucceeded,
		Revision: "main@0123456789abcdef0123456789abcdef01234567", AppliedRevision: "main@0123456789abcdef0123456789abcdef01234567",
		LastAttempt: time.Now().Add(-3*time.Hour - 10*time.Minute), Duration: 65432 * time.Millisecond,
		Steps: &daemon.Steps{Fetch: 48213 * time.Microsecond, Render: 1298765 * time.Microsecond, Plan: 64 * time.Second, Apply: 0, Drift: 29 * time.Millisecond}}
	var buf bytes.Buffer
	if err := printStatus(&buf, st, "text", palette{}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"(3h ago), took 1m5s (fetch 48ms, render 1.3s, plan 1m4s, apply 0s, drift 29ms)\n", "main@0123456789ab\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	for _, bad := range []string{"3h10m", "5.432s", "0123456789abcdef0123456789abcdef01234567"} {
		if strings.Contains(out, bad) {
			t.Errorf("status shows %q:\n%s", bad, out)
		}
	}
}

// TestStatusShowsWhatWasTakenBack: the fields a revision took back from another manager
// (kubectl scale) are listed, as the status JSON records them.
func TestStatusShowsWhatWasTakenBack(t *testing.T) {
	st := daemon.Status{Result: daemon.ResultSucceeded, TakenBack: []string{`Deployment team-a/web: took back .spec.replicas from "kubectl"`}}
	var buf bytes.Buffer
	if err := printStatus(&buf, st, "text", palette{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "Taken back from other managers") ||
		!strings.Contains(buf.String(), `  Deployment team-a/web: took back .spec.replicas from "kubectl"`+"\n") {
		t.Errorf("status does not list what was taken back:\n%s", buf.String())
	}
}

// TestStatusShowsHeldNamespaces: a namespace held at its last good revision is listed with
// the revision and every error of its files, the first on the namespace's line.
func TestStatusShowsHeldNamespaces(t *testing.T) {
	st := daemon.Status{Result: daemon.ResultSucceeded, Held: []daemon.HeldScope{{Namespace: "bob",
		Revision: "main@4f9c2a71d0e8aa55bb66cc77dd88ee99ff001122",
		Errors:   []string{"teams/bob/widget.yaml:2:7: kind: not a tenant kind", "teams/bob/train.yaml:8:3: resources.gpus: unknown field"}}}}
	var buf bytes.Buffer
	if err := printStatus(&buf, st, "text", palette{}); err != nil {
		t.Fatal(err)
	}
	want := "Held (their files have errors; each namespace keeps the revision it is held at, the others apply):\n" +
		"  bob: held at main@4f9c2a71d0e8: teams/bob/widget.yaml:2:7: kind: not a tenant kind\n" +
		"    teams/bob/train.yaml:8:3: resources.gpus: unknown field\n"
	if !strings.HasSuffix(buf.String(), want) {
		t.Errorf("status:\n%s\nwant it to end with:\n%s", buf.String(), want)
	}
}

// TestStatusShowsAnApplyNotEnded: an apply recorded before its first write (in progress, or
// interrupted by a crash) has its own line, with its revision and age.
func TestStatusShowsAnApplyNotEnded(t *testing.T) {
	since := time.Date(2026, 5, 1, 10, 4, 5, 0, time.UTC)
	st := daemon.Status{Result: daemon.ResultSucceeded, AppliedRevision: "main@0123456789abcdef0123456789abcdef01234567",
		Applying: &daemon.Applying{Revision: "main@4f9c2a71d0e8aa55bb66cc77dd88ee99ff001122", Since: since}}
	var buf bytes.Buffer
	if err := printStatus(&buf, st, "text", palette{}); err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile(`(?m)^Applying: +revision main@4f9c2a71d0e8 since 2026-05-01T10:04:05Z \(` + humanize.Age(time.Since(since)) + ` ago\): not ended;`)
	if !want.MatchString(buf.String()) {
		t.Errorf("status:\n%s\nwant a line %q", buf.String(), want)
	}
}

// TestStatusShowsASlowFetch: a fetch that has lasted longer than a few seconds has its own
// line, "fetching for 45s".
func TestStatusShowsASlowFetch(t *testing.T) {
	since := time.Now().Add(-45 * time.Second)
	st := daemon.Status{Result: daemon.ResultSucceeded, FetchingSince: since}
	var buf bytes.Buffer
	if err := printStatus(&buf, st, "text", palette{}); err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile(`(?m)^Fetching: +for 4[56]s, since ` + regexp.QuoteMeta(since.UTC().Format(time.RFC3339)) + `: the source has not answered yet$`)
	if !want.MatchString(buf.String()) {
		t.Errorf("status:\n%s\nwant a line %q", buf.String(), want)
	}
}

// TestStatusShowsAnAPIServerOutage: the status that the daemon serves (gpuctl status --server)
// says since when it cannot reach the API server (issue 32).
func TestStatusShowsAnAPIServerOutage(t *testing.T) {
	since := time.Now().Add(-2 * time.Minute)
	st := daemon.Status{Result: daemon.ResultSucceeded, APIServer: &daemon.Unreachable{Since: since, Error: "dial tcp 10.96.0.1:443: connect: connection refused"}}
	var buf bytes.Buffer
	if err := printStatus(&buf, st, "text", palette{}); err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile(`(?m)^API server: +unreachable since ` + regexp.QuoteMeta(since.UTC().Format(time.RFC3339)) + ` \(2m\): dial tcp 10\.96\.0\.1:443: connect: connection refused; nothing is synced`)
	if !want.MatchString(buf.String()) {
		t.Errorf("status:\n%s\nwant a line %q", buf.String(), want)
	}
}

// TestStatusNamesTheCluster: the status of a daemon of a named cluster (--cluster) says it
// first, and -o json has "cluster"; a status without one has no Cluster line.
func TestStatusNamesTheCluster(t *testing.T) {
	st := daemon.Status{Cluster: "gpu-a", Source: "git https://example.com/gpus.git", Result: daemon.ResultSucceeded}
	var buf bytes.Buffer
	if err := printStatus(&buf, st, "text", palette{}); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^Cluster: +gpu-a\nSource: +git https://example\.com/gpus\.git\n`).MatchString(buf.String()) {
		t.Errorf("status:\n%s\nwant Cluster: gpu-a first", buf.String())
	}
	buf.Reset()
	if err := printStatus(&buf, st, "json", palette{}); err != nil || !strings.Contains(buf.String(), `"cluster": "gpu-a"`) {
		t.Errorf("-o json (%v):\n%s", err, buf.String())
	}
	buf.Reset()
	st.Cluster = ""
	if err := printStatus(&buf, st, "text", palette{}); err != nil || strings.Contains(buf.String(), "Cluster") {
		t.Errorf("a status without a cluster (%v):\n%s", err, buf.String())
	}
}
