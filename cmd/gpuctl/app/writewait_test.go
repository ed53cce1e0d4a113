package app

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/reconciler/daemon"
)

// TestWaitForRevision feeds the wait the statuses a daemon writes, one a read.
func TestWaitForRevision(t *testing.T) {
	const sha = "c2c2c2c2c2c2c2c2"
	// c3 comes after c2; c1 before it.
	holds := func(rev string) bool { return rev == sha || rev == "c3" }
	cases := map[string]struct {
		statuses []daemon.Status
		errs     []error
		want     string // in the error, "" for none
		note     string // on the progress writer
	}{
		"applied": {statuses: []daemon.Status{
			{AppliedRevision: "c1", Revision: "c1", Result: daemon.ResultSucceeded},
			{AppliedRevision: "c1", Revision: sha, Result: daemon.ResultPending},
			{AppliedRevision: sha, Revision: sha, Result: daemon.ResultSucceeded},
		}, note: "applied c2c2c2c2c2c2"},
		"a later revision applied": {statuses: []daemon.Status{{AppliedRevision: "c3", Revision: "c3", Result: daemon.ResultSucceeded}}, note: "applied"},
		"invalid": {statuses: []daemon.Status{{AppliedRevision: "c1", Revision: sha, Result: daemon.ResultInvalid, Message: "teams/alice/x.yaml:3: ..."}},
			want: "gpuctl-reconciler did not apply c2c2c2c2c2c2: Invalid: teams/alice/x.yaml:3: ..."},
		"status unreadable, then applied": {statuses: []daemon.Status{{}, {AppliedRevision: sha}}, errs: []error{errors.New("forbidden"), nil},
			note: "waiting for gpuctl-reconciler to apply c2c2c2c2c2c2: cannot read its status: forbidden"},
		"never": {statuses: []daemon.Status{{AppliedRevision: "c1", Revision: "c1", Result: daemon.ResultSucceeded}}, want: "c2c2c2c2c2c2 is not applied yet",
			note: "waiting for gpuctl-reconciler to apply c2c2c2c2c2c2: it last applied c1"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			i := 0
			read := func(context.Context) (daemon.Status, error) {
				k := min(i, len(c.statuses)-1)
				i++
				var err error
				if k < len(c.errs) {
					err = c.errs[k]
				}
				return c.statuses[k], err
			}
			ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
			defer cancel()
			var w bytes.Buffer
			_, err := waitForRevision(ctx, &w, read, holds, sha, time.Millisecond)
			if (err == nil) != (c.want == "") || err != nil && !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
			if !strings.Contains(w.String(), c.note) {
				t.Fatalf("progress:\n%s", w.String())
			}
		})
	}
}
