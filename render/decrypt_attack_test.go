package render_test

import (
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/render"
	"github.com/gpuctl/gpuctl/secrets/sops"
)

// TestDecryptedFilesMeetTenancy: a team's encrypted file is held to the tenancy rules after
// it is decrypted, as its plaintext would be: one naming another team's namespace, or a kind
// that no team may declare, is refused at its file, and no error quotes a decrypted value.
func TestDecryptedFilesMeetTenancy(t *testing.T) {
	const value = "hf_SECRETsecretSECRET0123"
	alice, admin := keyring(t, "alice"), keyring(t, "admin")
	dec := render.NewDecryptor(admin, map[string]*sops.Keyring{"alice": alice})
	for name, plain := range map[string]string{
		"another namespace": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: stolen\n  namespace: bob\nstringData:\n  TOKEN: " + value + "\n",
		"a forbidden kind":  "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: own\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\nsubjects: [{kind: Group, name: " + value + "}]\nstringData:\n  TOKEN: " + value + "\n",
		"bad base64":        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: bad\ndata:\n  TOKEN: " + value + "!\n",
		"a list value":      "apiVersion: v1\nkind: Secret\nmetadata:\n  name: bad\ndata:\n  TOKEN: [" + value + "]\nstringData:\n  X: {a: " + value + "}\n",
		"an unknown field":  "apiVersion: v1\nkind: Secret\nmetadata:\n  name: bad\nstringData:\n  TOKEN: " + value + "\n" + value + ": 1\n",
	} {
		t.Run(name, func(t *testing.T) {
			enc, err := sops.Encrypt([]byte(plain), append(alice.Recipients(), admin.Recipients()...))
			if err != nil {
				t.Fatal(err)
			}
			res := renderFilesWith(t, map[string]string{
				".gpuctl.yaml":                "version: v0.1\nnamespaces:\n  - path: teams/*/**\n    namespace: $1\n",
				"teams/alice/token.sops.yaml": string(enc),
			}, render.Options{Decryptor: dec})
			errs := res.Errors()
			for _, e := range errs {
				if strings.Contains(e.Error(), value) {
					t.Errorf("an error quotes the decrypted value: %v", e)
				}
			}
			if name == "another namespace" || name == "a forbidden kind" {
				if len(errs) == 0 || !strings.HasSuffix(errs[0].File, "teams/alice/token.sops.yaml") {
					t.Fatalf("errors %v, want the file refused by the tenancy rules", errs)
				}
				for _, o := range res.Objects {
					if o.GetNamespace() == "bob" || o.GetKind() == "ClusterRoleBinding" {
						t.Errorf("rendered %s %s/%s from alice's encrypted file", o.GetKind(), o.GetNamespace(), o.GetName())
					}
				}
			}
		})
	}
}
