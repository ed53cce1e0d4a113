package app

import (
	"fmt"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/reconciler/daemon"
)

// statusAPI is a stub of a daemon's API that answers st (to GET /api/v1/status) to token.
func statusAPI(t *testing.T, token string, st daemon.Status) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(bearerJSON(token, st))
	t.Cleanup(srv.Close)
	return srv
}

// TestStatusAllClustersWarnsOfAMislabelledCluster (issue 37): an entry of the config file named
// gpu-a whose reconciler says it is gpu-b (its --cluster) is a warning on stderr, in every
// output; an entry whose reconciler says its own name, or none (no --cluster), is not.
func TestStatusAllClustersWarnsOfAMislabelledCluster(t *testing.T) {
	ok := daemon.Status{Result: daemon.ResultSucceeded, Revision: "main@0123456789abcdef0123456789abcdef01234567"}
	mislabelled, right, unnamed := ok, ok, ok
	mislabelled.Cluster, right.Cluster = "gpu-b", "gpu-b"
	fleetConfig(t, fmt.Sprintf("clusters:\n"+
		"  - {name: gpu-a, server: %s, token: tok-a}\n  - {name: gpu-b, server: %s, token: tok-b}\n  - {name: gpu-c, server: %s, token: tok-c}\n",
		statusAPI(t, "tok-a", mislabelled).URL, statusAPI(t, "tok-b", right).URL, statusAPI(t, "tok-c", unnamed).URL))
	want := "warning: cluster gpu-a: the config file names it gpu-a, its gpuctl-reconciler says gpu-b (--cluster): does the entry read the right cluster?\n"
	for _, output := range []string{"text", "json"} {
		out, errOut, code := runDriftCommand(t, "status", "--all-clusters", "-o", output)
		if code != 0 || errOut != want {
			t.Errorf("-o %s: exit %d, stderr\n%s\nwant\n%s", output, code, errOut, want)
		}
		if output == "text" && len(regexp.MustCompile(`(?m)^gpu-[abc] +main@0123456789ab +Succeeded `).FindAllString(out, -1)) != 3 {
			t.Errorf("-o text: want a row of each cluster:\n%s", out)
		}
		if strings.Contains(out, "warning") {
			t.Errorf("-o %s: the warning is on stdout:\n%s", output, out)
		}
	}
}
