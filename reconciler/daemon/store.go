package daemon

import (
	"context"
	"fmt"

	"github.com/gpuctl/gpuctl/internal/configmap"
	"github.com/gpuctl/gpuctl/internal/keys"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// Store reads and writes the status ConfigMap: the daemon's status, and the sync requests of
// `gpuctl sync`. Any replica and any client with a kubeconfig can use it.
type Store struct {
	Kube      kubernetes.Interface
	Namespace string
	Name      string
}

// NewStore returns the store of the status ConfigMap in namespace (default name gpuctl-status).
func NewStore(kube kubernetes.Interface, namespace string) *Store {
	return &Store{Kube: kube, Namespace: namespace, Name: keys.StatusName}
}

// Read returns the status and the pending sync request (annotation), if any.
func (s *Store) Read(ctx context.Context) (Status, string, error) {
	cm, err := s.Kube.CoreV1().ConfigMaps(s.Namespace).Get(ctx, s.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return s.none(), "", nil
	}
	if err != nil {
		return Status{}, "", err
	}
	st, err := s.decode(cm)
	if err != nil {
		return Status{}, "", err
	}
	return st, cm.Annotations[keys.SyncRequestedAt], nil
}

// none is the status while there is no status ConfigMap.
func (s *Store) none() Status {
	return Status{Result: ResultPending, Message: "no sync yet: is gpuctl-reconciler running in namespace " + s.Namespace + "?"}
}

// decode returns the status that the status ConfigMap cm holds (Pending when it holds none).
func (s *Store) decode(cm *corev1.ConfigMap) (Status, error) {
	data := cm.Data[keys.StatusKey]
	if data == "" {
		return Status{Result: ResultPending}, nil
	}
	st, err := ParseStatus(data)
	if err != nil {
		return Status{}, fmt.Errorf("%s/%s: bad status: %w", s.Namespace, s.Name, err)
	}
	return st, nil
}

// Write records the status, creating the ConfigMap (and its namespace) when missing. It does
// not touch the request annotation.
func (s *Store) Write(ctx context.Context, st Status) error {
	return configmap.WriteData(ctx, s.Kube, s.Namespace, s.Name, map[string]string{keys.StatusKey: st.Marshal()}, s.ensureNamespace)
}

func (s *Store) ensureNamespace(ctx context.Context) error {
	return EnsureNamespace(ctx, s.Kube, s.Namespace)
}

// EnsureNamespace creates the daemon's namespace when it is missing (deploy/ creates it; a
// daemon run by hand may be the first to need it).
func EnsureNamespace(ctx context.Context, kube kubernetes.Interface, name string) error {
	if _, err := kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{}); err == nil {
		return nil
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	_, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{FieldManager: keys.ReconcilerFieldManager})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// Request asks the daemon for a sync now, as `flux reconcile` does: it sets the request
// annotation to id (NewRequestID) on the status ConfigMap, and returns the request with the
// resourceVersion that its write made (Status.Answers tells the status that answers it).
func (s *Store) Request(ctx context.Context, id string) (Request, error) {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, keys.SyncRequestedAt, id)
	cm, err := s.Kube.CoreV1().ConfigMaps(s.Namespace).Patch(ctx, s.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return Request{}, fmt.Errorf("no %s/%s ConfigMap: gpuctl-reconciler has not run in namespace %s", s.Namespace, s.Name, s.Namespace)
	}
	if err != nil {
		return Request{}, err
	}
	return Request{ID: id, Version: cm.ResourceVersion}, nil
}
