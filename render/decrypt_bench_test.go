package render_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/render"
	"github.com/gpuctl/gpuctl/secrets/sops"
)

// BenchmarkRender1000EncryptedSecrets: issue 33's bar — a render that decrypts 1,000
// SOPS-encrypted Secrets (one a file, in the teams' directories, each team's with its key)
// takes ≤ 0.5 s more than the same render without them; a render of the same revision again
// (the daemon's next sync, the files unchanged) decrypts nothing.
func BenchmarkRender1000EncryptedSecrets(b *testing.B) {
	const n = 1000
	key, err := os.ReadFile("../secrets/sops/testdata/test-only-alice.agekey")
	if err != nil {
		b.Fatal(err)
	}
	ids, err := sops.ParseIdentities(key)
	if err != nil {
		b.Fatal(err)
	}
	plain := benchRepo(b, n) // 1,000 workload files in teams/team-00..19
	withSecrets := benchRepo(b, n)
	recipient := "age1tvkft5ntwk4vc33hw8ldkeas6r8ckpltqh9czcxk5m5970lh5vxswa92qp" // test-only-alice's
	for i := range n {
		team := fmt.Sprintf("team-%02d", i%20)
		enc, err := sops.Encrypt([]byte(fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds-%04d\n  namespace: %s\nstringData:\n  HF_TOKEN: hf_bench%04d\n  WANDB_API_KEY: wandb-bench-%04d\n", i, team, i, i)),
			[]string{recipient})
		if err != nil {
			b.Fatal(err)
		}
		if err := withSecrets.WriteFile(fmt.Sprintf("/repo/teams/%s/creds-%04d.sops.yaml", team, i), enc); err != nil {
			b.Fatal(err)
		}
	}
	decryptor := func() *render.Decryptor {
		teams := map[string]*sops.Keyring{}
		for t := range 20 {
			teams[fmt.Sprintf("team-%02d", t)] = sops.NewKeyring(ids) // a team's keyring each, as the daemon reads them
		}
		return render.NewDecryptor(nil, teams)
	}
	var without, with, again time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if _, err := render.New(render.Options{}).Render(plain, "/repo"); err != nil {
			b.Fatal(err)
		}
		without += time.Since(start)
		d := decryptor()
		r := render.New(render.Options{Decryptor: d})
		start = time.Now()
		res, err := r.Render(withSecrets, "/repo")
		with += time.Since(start)
		if err != nil || len(res.Objects) < n {
			b.Fatalf("render with secrets: %v", err)
		}
		decrypted := d.Decrypted()
		start = time.Now()
		if _, err := r.Render(withSecrets, "/repo"); err != nil {
			b.Fatal(err)
		}
		again += time.Since(start)
		if decrypted != n || d.Decrypted() != n {
			b.Fatalf("decrypted %d files, then %d in all; want %d, then none more", decrypted, d.Decrypted(), n)
		}
	}
	b.StopTimer()
	per := func(d time.Duration) float64 { return d.Seconds() / float64(b.N) }
	extra := per(with) - per(without)
	verdict := "PASS"
	if extra > 0.5 {
		verdict = "FAIL"
	}
	b.Logf("render of 1,000 workload files: %.3f s; with 1,000 encrypted Secrets decrypted: %.3f s (+%.3f s, bar +0.5 s: %s); the same revision again: %.3f s, 0 decrypted",
		per(without), per(with), extra, verdict, per(again))
	b.ReportMetric(extra, "s/extra-decrypt-1000")
}
