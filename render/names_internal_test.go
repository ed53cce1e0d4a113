package render

import (
	"math/rand/v2"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// The byte loops of nameProblem tell exactly what the validation functions and kindPattern
// tell, on random strings near the rules' edges (dots, dashes, digits, capitals, lengths
// around the limits).
func TestNameChecksAreTheValidations(t *testing.T) {
	rng := rand.New(rand.NewPCG(18, 18))
	alphabet := []byte("abz09-.A_:")
	cases := []string{"", "a", "-", "a-", "-a", "0", "a.b", "a..b", ".a", "a.", "0abc", "A", "Job", "j0b", "0Job"}
	for range 100000 {
		n := rng.IntN(12)
		if rng.IntN(50) == 0 {
			n = 60 + rng.IntN(200) // near and past the length limits
		}
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
			if rng.IntN(3) > 0 {
				b[i] = "abcxyz0189"[rng.IntN(10)]
			}
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		for _, c := range []struct {
			name      string
			fast, ref []string
		}{
			{"DNS-1123 label", dns1123Label(s), validation.IsDNS1123Label(s)},
			{"DNS-1035 label", dns1035Label(s), validation.IsDNS1035Label(s)},
			{"DNS-1123 subdomain", dns1123Subdomain(s), validation.IsDNS1123Subdomain(s)},
		} {
			if !slices.Equal(c.fast, c.ref) {
				t.Fatalf("%s of %q: %q, the validation function says %q", c.name, s, c.fast, c.ref)
			}
		}
		if isKind(s) != kindPattern.MatchString(s) {
			t.Fatalf("isKind(%q) = %v, kindPattern says %v", s, isKind(s), !isKind(s))
		}
	}
}
