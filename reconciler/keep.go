package reconciler

import (
	"context"
	"encoding/json"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// A training job's Job (or JobSet) keeps the spec it was created with while its file does not
// change. When a newer gpuctl, or an admin's setting, renders it with an immutable field
// changed, recreating it would run a finished job again and restart a running one from its
// last checkpoint, for no change of the job's own. The render annotates it with the digest
// of what its file declares (keys.SpecDigest): a live object with the same digest, or with
// none (made by a gpuctl that recorded none), is kept as it is. The sync records that on it
// (keys.KeptHash, with the digest), so that later syncs decide it unchanged without a request,
// until the file changes.

// keptReason says why a change keeps its object.
const keptReason = "kept as it is: its file did not change, and gpuctl would change an immutable field of it (%s); a change of its file recreates it"

// keepable reports whether live may be kept as it is where desired would change an immutable
// field of it: desired carries a spec digest, and live the same one, or none but an
// applied-hash (a gpuctl that recorded no digest applied it). A Job that a team deleted and made
// again by hand, without gpuctl's annotations, is recreated from its file as before.
func keepable(desired, live *unstructured.Unstructured) bool {
	d := object.AnnotationOf(desired, keys.SpecDigest)
	if d == "" || live == nil || live.GetDeletionTimestamp() != nil {
		return false
	}
	l, has := live.GetAnnotations()[keys.SpecDigest]
	return l == d || !has && object.AnnotationOf(live, keys.AppliedHash) != ""
}

// kept reports whether an earlier sync kept live as it is for desired's configuration (its
// applied-hash), and its file has not changed since.
func kept(desired, live *unstructured.Unstructured) bool {
	d, h := object.AnnotationOf(desired, keys.SpecDigest), object.AnnotationOf(desired, keys.AppliedHash)
	return d != "" && h != "" && live != nil && live.GetDeletionTimestamp() == nil &&
		object.AnnotationOf(live, keys.SpecDigest) == d && object.AnnotationOf(live, keys.KeptHash) == h
}

// decideKept decides a change whose object an earlier sync kept: unchanged, without a request.
func (m *Manager) decideKept(c *Change) bool {
	if !kept(c.Desired, c.Live) {
		return false
	}
	c.Action, c.Reason = ActionUnchanged, "kept as it is: its file did not change since it was created"
	if m.noting.Load() {
		m.verified.note(c.Live, c.appliedHash()) // a plan from the watches trusts it too
	}
	return true
}

// keep records on a kept object the digest of its file and the configuration it was kept for.
func (m *Manager) keep(ctx context.Context, c *Change) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		keys.SpecDigest: object.AnnotationOf(c.Desired, keys.SpecDigest),
		keys.KeptHash:   c.appliedHash(),
	}}})
	if err != nil {
		return err
	}
	return m.write(ctx, c, func(ri dynamic.ResourceInterface) error {
		_, err := ri.Patch(ctx, c.Object.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: m.opts.FieldManager})
		return err
	})
}
