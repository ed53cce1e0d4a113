package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuctl/gpuctl/secrets/sops"
	"github.com/gpuctl/gpuctl/test/testcluster"
)

// aliceRecipient is the public key of secrets/sops/testdata/test-only-alice.agekey.
const aliceRecipient = "age1tvkft5ntwk4vc33hw8ldkeas6r8ckpltqh9czcxk5m5970lh5vxswa92qp"

// TestEncryptedTeamSecretRunsItsJob: a team's job reads HF_TOKEN from a Secret committed
// encrypted with SOPS in the team's directory. gpuctl sync with the team's age key decrypts it
// at render time: the Secret in the team's namespace holds the value, the Job's container reads
// it by secretKeyRef; the file in Git holds no plaintext and no output shows the value. Without
// the key, the Secret is left as it is in the cluster ("not decrypted here").
func TestEncryptedTeamSecretRunsItsJob(t *testing.T) {
	const ns, value = "enc-alice", "hf_encryptedTokenE2E0001"
	kube := kubernetes.NewForConfigOrDie(testcluster.Current().RESTConfig())
	logsNamespace(t, kube, ns) // a team's namespace exists before its files are synced
	enc, err := sops.Encrypt([]byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: hf\n  namespace: "+ns+"\ntype: Opaque\nstringData:\n  HF_TOKEN: "+value+"\n"),
		[]string{aliceRecipient})
	if err != nil {
		t.Fatal(err)
	}
	repo := t.TempDir()
	files := map[string]string{
		".gpuctl.yaml":                  "version: v0.1\nnamespaces:\n  - path: teams/*/**\n    namespace: $1\n",
		"teams/" + ns + "/hf.sops.yaml": string(enc),
		"teams/" + ns + "/train.yaml": `kind: training
version: v0.1
job: {name: sft}
environment:
  image: registry.example.com/train:v1
  command: [python, train.py]
  env:
    - name: HF_TOKEN
      secret: {name: hf, key: HF_TOKEN}
resources: {gpu: 1}
`,
	}
	for name, content := range files {
		p := filepath.Join(repo, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if strings.Contains(string(enc), value) {
		t.Fatal("the encrypted file holds the value")
	}
	keysDir := t.TempDir()
	key, err := os.ReadFile("../../secrets/sops/testdata/test-only-alice.agekey")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(keysDir, ns), key, 0o600); err != nil {
		t.Fatal(err)
	}

	// Without the key (a laptop, CI): the Secret is not decrypted, and neither compared nor applied.
	out, errOut, _ := gpuctl(t, "diff", repo, "--prune=false", "--color", "never")
	if !strings.Contains(out+errOut, "not decrypted here") || strings.Contains(out+errOut, value) {
		t.Errorf("diff without the key: want it to say the Secret is not decrypted here, and no value:\n%s\n%s", out, errOut)
	}

	out, errOut, code := gpuctl(t, "sync", "--local", repo, "--prune=false", "--age-keys", keysDir, "--color", "never")
	if code != 0 || strings.Contains(out+errOut, value) {
		t.Fatalf("sync with the team's key: exit %d (or the value shown)\n%s\n%s", code, out, errOut)
	}
	sec, err := kube.CoreV1().Secrets(ns).Get(t.Context(), "hf", metav1.GetOptions{})
	if err != nil || string(sec.Data["HF_TOKEN"]) != value {
		t.Fatalf("Secret %s/hf: %v, want HF_TOKEN decrypted", ns, err)
	}
	job, err := kube.BatchV1().Jobs(ns).Get(t.Context(), "sft", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ref string
	for _, e := range job.Spec.Template.Spec.Containers[0].Env {
		if e.Name == "HF_TOKEN" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			ref = e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
		}
	}
	if ref != "hf/HF_TOKEN" {
		t.Errorf("Job %s/sft: HF_TOKEN from %q, want the Secret hf's key HF_TOKEN", ns, ref)
	}
}
