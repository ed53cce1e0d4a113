package testcluster

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// Poll checks cond every 100ms until it holds, failing the test after timeout with what it
// waited for and the last error cond returned.
func Poll(t testing.TB, what string, timeout time.Duration, cond func(context.Context) (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		if err != nil {
			last = err
		}
		return ok, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v (last error: %v)", what, err, last)
	}
}

// NewNamespace creates a namespace named after the test, deleted after it, and waits for its
// default ServiceAccount so that pods can be created in it.
func NewNamespace(t testing.TB, client kubernetes.Interface) string {
	t.Helper()
	prefix := strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix[:min(len(prefix), 50)] + "-"}}
	ns, err := client.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	name := ns.Name
	t.Cleanup(func() { _ = client.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	Poll(t, "default ServiceAccount in "+name, time.Minute, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	return name
}

// NewClient returns a client of the package's cluster (Current) as its admin.
func NewClient(t testing.TB) kubernetes.Interface {
	t.Helper()
	client, err := kubernetes.NewForConfig(Current().RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return client
}
