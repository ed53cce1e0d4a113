package configmap

import (
	"context"
	"encoding/json"

	"github.com/gpuctl/gpuctl/internal/keys"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// WriteData merges data into the ConfigMap namespace/name (other keys and annotations stay),
// creating it, labelled g8s.host/managed-by=gpuctl, when missing; before a create, prepare
// runs (e.g. to create the namespace) when not nil.
func WriteData(ctx context.Context, kube kubernetes.Interface, namespace, name string, data map[string]string,
	prepare func(context.Context) error) error {
	patch, err := json.Marshal(map[string]any{"data": data})
	if err != nil {
		return err
	}
	cms := kube.CoreV1().ConfigMaps(namespace)
	opts := metav1.PatchOptions{FieldManager: keys.ReconcilerFieldManager}
	_, err = cms.Patch(ctx, name, types.MergePatchType, patch, opts)
	if !apierrors.IsNotFound(err) {
		return err
	}
	if prepare != nil {
		if err := prepare(ctx); err != nil {
			return err
		}
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace,
		Labels: map[string]string{keys.ManagedBy: keys.ManagedByValue}}, Data: data}
	_, err = cms.Create(ctx, cm, metav1.CreateOptions{FieldManager: keys.ReconcilerFieldManager})
	if apierrors.IsAlreadyExists(err) { // another writer created it meanwhile
		_, err = cms.Patch(ctx, name, types.MergePatchType, patch, opts)
	}
	return err
}
