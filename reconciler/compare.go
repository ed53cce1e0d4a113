package reconciler

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// appliedHash is the hash of the configuration gpuctl applies for an object, without the
// hash annotation itself: equal hashes mean equal configurations.
func appliedHash(u *unstructured.Unstructured) string {
	if _, ok := u.GetAnnotations()[keys.AppliedHash]; !ok {
		return hashOf(u)
	}
	c := u.DeepCopy()
	object.DropAppliedHash(c)
	return hashOf(c)
}

// hashOf hashes an object as it is.
func hashOf(u *unstructured.Unstructured) string {
	b, err := json.Marshal(u.Object) // map keys are sorted: the same object gives the same bytes
	if err != nil {
		panic(fmt.Sprintf("reconciler: hash %s: %v", object.RefOf(u), err)) // unstructured objects always marshal
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// upToDate decides locally, without a request, that a live object needs no apply: the
// configuration last applied (its hash) is the desired one, and every value gpuctl applies is
// still in the live object (InSync). False means "cannot tell": a server-side dry-run decides.
func (m *Manager) upToDate(desired, live *unstructured.Unstructured) bool {
	if live == nil || live.GetAnnotations()[keys.AppliedHash] != desired.GetAnnotations()[keys.AppliedHash] {
		return false
	}
	return m.InSync(desired, live)
}

// Digest identifies a set of desired objects as Plan prepared them (each carries its
// applied-hash): equal digests mean the same objects with the same configuration.
func Digest(objects []*unstructured.Unstructured) string {
	lines := make([]string, 0, len(objects))
	for _, u := range objects {
		h := u.GetAnnotations()[keys.AppliedHash]
		if h == "" {
			h = hashOf(u)
		}
		lines = append(lines, object.RefOf(u).Key()+" "+h)
	}
	sort.Strings(lines)
	sum := sha256.New()
	for _, l := range lines {
		sum.Write([]byte(l + "\n"))
	}
	return hex.EncodeToString(sum.Sum(nil)[:16])
}
