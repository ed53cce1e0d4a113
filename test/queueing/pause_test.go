package queueing

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gpuctl/gpuctl/test/testcluster"
)

// TestPausedJobLeavesItsQueue: under Kueue, `gpuctl pause job` on a running training job gives
// its GPUs back (its Workload is deactivated: Kueue evicts it, the Job is suspended and its pod
// goes), the paused job is not admitted again while its quota stands free, and `gpuctl resume
// job` puts it back in the queue, where it is admitted and runs. Kueue un-suspends an admitted
// Job whoever suspended it, so spec.suspend alone would not hold it: this is the real Kueue.
func TestPausedJobLeavesItsQueue(t *testing.T) {
	for k, v := range gitIdentity {
		t.Setenv(k, v) // for the git that gpuctl pause and resume run
	}
	client, dyn := clients(t)
	r := newRepo(t)
	// Team hold has 4 GPUs of training-pool and neither lends nor borrows. Its job long runs
	// for two minutes (a kustomize patch gives its pod kwok's delay annotation).
	r.write("teams/hold/long/train.yaml", `kind: training
version: v0.1
job:
  name: long
environment:
  image: registry.example.com/train:v1
resources:
  pool: training-pool
  gpu: 4
`)
	r.write("teams/hold/long/kustomization.yaml", `resources: [train.yaml]
patches:
  - target: {group: batch, version: v1, kind: Job, name: long}
    patch: |-
      apiVersion: batch/v1
      kind: Job
      metadata: {name: long}
      spec:
        template:
          metadata:
            annotations:
              `+testcluster.RunForAnnotation+`: 2m
`)
	r.gitInit()
	r.sync()
	running := func(job string) func(ctx context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			pods, err := podsOf(ctx, client, "hold", job)
			for _, p := range pods {
				if p.Status.Phase == "Running" && p.DeletionTimestamp == nil {
					return true, nil
				}
			}
			return false, err
		}
	}
	poll(t, "job long to run", running("long"))

	if out, errOut, code := gpuctl(t, "pause", "job", "hold.long", "--repo", r.dir); code != 0 {
		t.Fatalf("gpuctl pause: exit %d\n%s\n%s", code, out, errOut)
	}
	if log := r.gitLog(); !strings.Contains(log, "gpuctl: pause training long (test@example.com)") {
		t.Errorf("no pause commit in the repository's log:\n%s", log)
	}
	r.sync()
	poll(t, "job long's Workload to be inactive, its Job suspended and its pod gone", func(ctx context.Context) (bool, error) {
		active, err := workloadActive(ctx, t, "long")
		if err != nil || active {
			return false, err
		}
		job, err := client.BatchV1().Jobs("hold").Get(ctx, "long", metav1.GetOptions{})
		if err != nil || job.Spec.Suspend == nil || !*job.Spec.Suspend {
			return false, err
		}
		pods, err := podsOf(ctx, client, "hold", "long")
		return len(pods) == 0, err
	})

	// The GPUs it held are the team's again: another job of 4 GPUs is admitted and runs to
	// its end, and the paused one stays out of the queue with its quota free, over syncs.
	r.training("hold", "next", "medium", 4, 1)
	r.commitAll("next")
	r.sync()
	poll(t, "job next to finish on the GPUs that long gave back", func(ctx context.Context) (bool, error) {
		ws, err := workloads(ctx, dyn, "hold")
		return ws["next"].finished, err
	})
	r.sync()
	time.Sleep(2 * time.Second) // what Kueue would have admitted by now, it has
	ws, err := workloads(t.Context(), dyn, "hold")
	if err != nil {
		t.Fatal(err)
	}
	if ws["long"].reserved {
		t.Fatalf("the paused job holds quota again: %+v", ws["long"])
	}
	if pods, err := podsOf(t.Context(), client, "hold", "long"); err != nil || len(pods) != 0 {
		t.Fatalf("the paused job has %d pods (%v)", len(pods), err)
	}

	if out, errOut, code := gpuctl(t, "resume", "job", "hold.long", "--repo", r.dir); code != 0 {
		t.Fatalf("gpuctl resume: exit %d\n%s\n%s", code, out, errOut)
	}
	r.sync()
	poll(t, "job long to be admitted and run again", running("long"))
	if active, err := workloadActive(t.Context(), t, "long"); err != nil || !active {
		t.Errorf("job long's Workload after resume: active %v (%v)", active, err)
	}
	r.emptyTeam("hold")
}

// workloadActive reports spec.active of the Workload of team hold's Job job (Kueue's default:
// true).
func workloadActive(ctx context.Context, t *testing.T, job string) (bool, error) {
	_, dyn := clients(t)
	list, err := dyn.Resource(workloadsGVR).Namespace("hold").List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err
	}
	for i := range list.Items {
		if workloadOf(&list.Items[i]).job == job {
			active, found, _ := unstructured.NestedBool(list.Items[i].Object, "spec", "active")
			return active || !found, nil
		}
	}
	return false, nil
}

// gitInit makes the repository a Git work tree with one commit of everything, as gpuctl's
// write verbs need.
func (r *repo) gitInit() {
	r.t.Helper()
	r.git("init", "-q", "-b", "main")
	r.commitAll("initial")
}

// commitAll commits every change of the work tree.
func (r *repo) commitAll(msg string) {
	r.t.Helper()
	r.git("add", "-A")
	r.git("commit", "-q", "-m", msg)
}

// gitLog is the repository's one-line log.
func (r *repo) gitLog() string { return r.git("log", "--format=%s") }

// gitIdentity is the environment of every git the test runs: no system or user configuration,
// and who commits.
var gitIdentity = map[string]string{
	"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
	"GIT_AUTHOR_NAME": "test", "GIT_AUTHOR_EMAIL": "test@example.com",
	"GIT_COMMITTER_NAME": "test", "GIT_COMMITTER_EMAIL": "test@example.com",
}

func (r *repo) git(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = r.dir
	cmd.Env = cmd.Environ()
	for k, v := range gitIdentity {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
