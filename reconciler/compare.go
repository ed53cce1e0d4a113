package reconciler

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"sync"

	"github.com/gpuctl/gpuctl/internal/cores"
	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// appliedHash is the hash of the configuration gpuctl applies for an object, without the
// hash annotation itself: equal hashes mean equal configurations.
func appliedHash(u *unstructured.Unstructured) string {
	if !object.HasAnnotation(u, keys.AppliedHash) {
		return hashOf(u)
	}
	c := u.DeepCopy()
	object.DropAppliedHash(c)
	return hashOf(c)
}

// hashOf hashes an object as it is: the SHA-256 of its JSON as json.Marshal writes it (map
// keys sorted: the same object gives the same bytes), written by object.AppendJSON into a
// pooled buffer (a plan hashes every desired object).
func hashOf(u *unstructured.Unstructured) string {
	bp := hashBuffers.Get().(*[]byte)
	b, err := object.AppendJSON((*bp)[:0], u.Object)
	if err != nil {
		panic(fmt.Sprintf("reconciler: hash %s: %v", object.RefOf(u), err)) // unstructured objects always marshal
	}
	sum := sha256.Sum256(b)
	*bp = b
	hashBuffers.Put(bp)
	return hex.EncodeToString(sum[:16])
}

// hashBuffers are hashOf's buffers.
var hashBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// upToDate decides locally, without a request, that a live object needs no apply: the
// configuration last applied (its hash) is the desired one, and every value gpuctl applies is
// still in the live object (InSync). False means "cannot tell": a server-side dry-run decides.
func (m *Manager) upToDate(desired, live *unstructured.Unstructured) bool {
	return m.upToDateAs(desired, live, nil)
}

// upToDateAs is upToDate of a live object read as typed (nil: live is whole), live then
// holding its metadata alone: the values are compared in typed (see inSync).
func (m *Manager) upToDateAs(desired, live *unstructured.Unstructured, typed runtime.Object) bool {
	if live == nil || object.AnnotationOf(live, keys.AppliedHash) != object.AnnotationOf(desired, keys.AppliedHash) {
		return false
	}
	return m.inSync(desired, live, typed)
}

// Digest identifies a set of desired objects as Plan prepared them (each carries its
// applied-hash): equal digests mean the same objects with the same configuration.
func Digest(objects []*unstructured.Unstructured) string {
	lines := make([]string, len(objects))
	cores.Each(len(objects), func(i int) {
		u := objects[i]
		h := object.AnnotationOf(u, keys.AppliedHash)
		if h == "" {
			h = hashOf(u)
		}
		lines[i] = object.RefOf(u).Key() + " " + h + "\n"
	})
	slices.Sort(lines)
	n := 0
	for _, l := range lines {
		n += len(l)
	}
	all := make([]byte, 0, n) // one write: a conversion of each line to bytes was 10,000 copies
	for _, l := range lines {
		all = append(all, l...)
	}
	sum := sha256.Sum256(all)
	return hex.EncodeToString(sum[:16])
}
