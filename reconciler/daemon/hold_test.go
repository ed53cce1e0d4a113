package daemon_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/internal/humanize"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// holdConfig maps teams/<name>/ to namespace <name>.
const holdConfig = "version: v0.1\nnamespaces:\n  - path: teams/*/**\n    namespace: $1\n"

// scratchService is bob's only Service: while bob is held, only the held member keeps the
// kind in the inventory, so that it is pruned once bob's fix removes it.
const scratchService = "apiVersion: v1\nkind: Service\nmetadata: {name: scratch}\nspec:\n  ports: [{port: 80}]\n  selector: {app: scratch}\n"

func configMap(name, value string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + "}\ndata: {v: \"" + value + "\"}\n"
}

// TestATeamsErrorHoldsOnlyThatTeam (issue 30, the design gap): a file of bob's that render
// refuses holds bob's namespace at its last good revision — nothing of it applied, changed or
// pruned — and says so in the status, while alice's change in the same revision is applied.
// Fixing bob's file applies his changes and prunes what he removed; an error in an admin's
// file still holds everyone.
func TestATeamsErrorHoldsOnlyThatTeam(t *testing.T) {
	alice, bob := "hold-alice", "hold-bob"
	quota := "kind: quota\nversion: v0.1\nmetadata: {name: teams}\nusers:\n  " + alice + ": {cpu: 1, memory: 1Gi, gpu: 0}\n  " + bob + ": {cpu: 1, memory: 1Gi, gpu: 0}\n"
	h := newHarness(t, "hold", map[string]string{
		".gpuctl.yaml":                      holdConfig,
		"quotas/teams.yaml":                 quota,
		"teams/" + alice + "/settings.yaml": configMap("settings", "a1"),
		"teams/" + bob + "/settings.yaml":   configMap("settings", "b1"),
		"teams/" + bob + "/scratch.yaml":    scratchService,
		"teams/" + bob + "/unchanged.yaml":  configMap("unchanged", "b1"),
	})
	h.start()
	first := h.waitStatus("first sync", func(s daemon.Status) bool { return s.Result == daemon.ResultSucceeded })
	value := func(ns, name string) string {
		t.Helper()
		cm, err := h.kube.CoreV1().ConfigMaps(ns).Get(h.ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return "<gone>"
		} else if err != nil {
			t.Fatal(err)
		}
		return cm.Data["v"]
	}
	serviceExists := func(ns, name string) bool {
		t.Helper()
		_, err := h.kube.CoreV1().Services(ns).Get(h.ctx, name, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}
	if value(alice, "settings") != "a1" || value(bob, "settings") != "b1" {
		t.Fatal("the first revision was not applied")
	}

	// One revision: bob commits a ClusterRoleBinding and a typo, edits one file and removes
	// another; alice edits hers.
	h.write("teams/"+bob+"/widget.yaml", "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: root}\n")
	h.write("teams/"+bob+"/settings.yaml", configMap("settings", "b2"))
	if err := os.Remove(filepath.Join(h.dir, "teams", bob, "scratch.yaml")); err != nil {
		t.Fatal(err)
	}
	h.write("teams/"+alice+"/settings.yaml", configMap("settings", "a2"))
	st := h.waitStatus("alice applied, bob held", func(s daemon.Status) bool {
		return s.Result == daemon.ResultSucceeded && len(s.Held) == 1 && value(alice, "settings") == "a2"
	})
	held := st.Held[0]
	if held.Namespace != bob || held.Revision != first.AppliedRevision {
		t.Errorf("held = %+v, want %s held at %s", held, bob, first.AppliedRevision)
	}
	wantErr := "teams/" + bob + "/widget.yaml:2:7: kind: tenancy kinds: ClusterRoleBinding.rbac.authorization.k8s.io is not a kind"
	if len(held.Errors) != 1 || !strings.HasPrefix(held.Errors[0], wantErr) {
		t.Errorf("held errors = %q, want one starting %q", held.Errors, wantErr)
	}
	if line := held.String(); !strings.HasPrefix(line, bob+": held at "+humanize.Revision(first.AppliedRevision)+": "+wantErr) {
		t.Errorf("held line %q", line)
	}
	if !strings.HasSuffix(st.Message, "; 1 namespace held at the last good revision for errors in its files (see held)") {
		t.Errorf("message %q does not say that %s is held", st.Message, bob)
	}
	if st.AppliedRevision != st.Revision {
		t.Errorf("applied %s, attempted %s: the revision applies for the other scopes", st.AppliedRevision, st.Revision)
	}
	for name, want := range map[string]string{"settings": "b1", "unchanged": "b1"} {
		if got := value(bob, name); got != want {
			t.Errorf("bob's %s = %s while held, want %s (as the last good revision left it)", name, got, want)
		}
	}
	if !serviceExists(bob, "scratch") {
		t.Error("bob's removed Service was pruned while he is held")
	}
	if _, err := h.kube.RbacV1().ClusterRoleBindings().Get(h.ctx, "root", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("bob's ClusterRoleBinding exists (err %v)", err)
	}

	// Another revision with bob still broken keeps him held at the same revision.
	h.write("teams/"+alice+"/settings.yaml", configMap("settings", "a3"))
	st = h.waitStatus("alice applied again", func(s daemon.Status) bool {
		return s.Result == daemon.ResultSucceeded && value(alice, "settings") == "a3"
	})
	if len(st.Held) != 1 || st.Held[0].Revision != first.AppliedRevision {
		t.Errorf("held = %+v, want %s still held at %s", st.Held, bob, first.AppliedRevision)
	}

	// Bob fixes his file: his edit applies and his removed file is pruned.
	if err := os.Remove(filepath.Join(h.dir, "teams", bob, "widget.yaml")); err != nil {
		t.Fatal(err)
	}
	st = h.waitStatus("bob released", func(s daemon.Status) bool {
		return s.Result == daemon.ResultSucceeded && len(s.Held) == 0 && value(bob, "settings") == "b2"
	})
	if serviceExists(bob, "scratch") {
		t.Error("bob's removed Service is still there after his fix, want pruned")
	}
	if value(bob, "unchanged") != "b1" {
		t.Error("bob's unchanged ConfigMap was lost")
	}

	// An admin's error holds every team: alice's next edit waits.
	h.write("pools/bad.yaml", "kind: pool\nversion: v0.1\nmetadata: {name: p}\nnodez: {}\n")
	h.write("teams/"+alice+"/settings.yaml", configMap("settings", "a4"))
	st = h.waitStatus("invalid revision", func(s daemon.Status) bool {
		return s.Result == daemon.ResultInvalid && slices.ContainsFunc(s.Errors, func(e string) bool { return strings.HasPrefix(e, "pools/bad.yaml") })
	})
	time.Sleep(200 * time.Millisecond)
	if got := value(alice, "settings"); got != "a3" {
		t.Errorf("alice's settings = %s with an admin's error in the revision, want a3", got)
	}
	if len(st.Held) != 0 {
		t.Errorf("held = %+v with an admin's error", st.Held)
	}
}
