package deploytest

import (
	"context"
	"strings"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/test/testcluster"
)

const (
	labelerSA = "gpuctl-node-labeler"
	// nodeNameClaim is the user extra that the API server fills from a pod-bound token.
	nodeNameClaim = "authentication.kubernetes.io/node-name"
)

// labelerToken runs a pod of the labeler's ServiceAccount on node (kwok marks it running) and
// returns a token bound to that pod, as the kubelet gives the DaemonSet's pods: the API server
// puts the pod's node in it. The pod is deleted when the test ends.
func labelerToken(t *testing.T, node string) string {
	t.Helper()
	ctx := context.Background()
	client := kubernetes.NewForConfigOrDie(testcluster.Current().RESTConfig())
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "labeler-" + node, Namespace: keys.SystemNamespace},
		Spec: corev1.PodSpec{NodeName: node, ServiceAccountName: labelerSA,
			Containers: []corev1.Container{{Name: "labeler", Image: "ghcr.io/gpuctl/gpuctl-node-labeler:test"}}},
	}
	created, err := client.CoreV1().Pods(keys.SystemNamespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.CoreV1().Pods(keys.SystemNamespace).Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))})
	})
	return token(t, &authv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: created.Name, UID: created.UID})
}

// token requests a token of the labeler's ServiceAccount, bound to an object or not.
func token(t *testing.T, bound *authv1.BoundObjectReference) string {
	t.Helper()
	client := kubernetes.NewForConfigOrDie(testcluster.Current().RESTConfig())
	tok, err := client.CoreV1().ServiceAccounts(keys.SystemNamespace).CreateToken(context.Background(), labelerSA,
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(600)), BoundObjectRef: bound}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tok.Status.Token
}

// clientFor is a client that authenticates with a bearer token only.
func clientFor(token string) kubernetes.Interface {
	admin := testcluster.Current().RESTConfig()
	return kubernetes.NewForConfigOrDie(&rest.Config{Host: admin.Host, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: admin.CAData}})
}

// TestNodeLabelerPolicy: with a token bound to a pod on node A, the labeler's ServiceAccount
// may set g8s.host/ labels on A, and nothing else: not on node B, not another label, taint or
// annotation; a token bound to no pod may label no node.
func TestNodeLabelerPolicy(t *testing.T) {
	install(t)
	const nodeA, nodeB = "nl-policy-a", "nl-policy-b"
	addNode(t, nodeA)
	addNode(t, nodeB)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sa := clientFor(labelerToken(t, nodeA))

	review, err := sa.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := review.Status.UserInfo.Extra[nodeNameClaim]; len(got) != 1 || got[0] != nodeA {
		t.Fatalf("the pod-bound token's %s is %v, want [%s] (user info %+v)", nodeNameClaim, got, nodeA, review.Status.UserInfo)
	}

	patch := func(c kubernetes.Interface, node, body string, dryRun bool) error {
		opts := metav1.PatchOptions{}
		if dryRun {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		_, err := c.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, []byte(body), opts)
		return err
	}
	foreignLabel := `{"metadata":{"labels":{"example.com/fake-gpu":"h100"}}}`
	waitEnforced(t, func() error { return patch(sa, nodeA, foreignLabel, true) })

	gpuLabel := `{"metadata":{"labels":{"g8s.host/gpu-type":"h100-80g"}}}`
	if err := patch(sa, nodeA, gpuLabel, false); err != nil {
		t.Errorf("a g8s.host/ label on its own node: %v", err)
	}
	refused := map[string]struct {
		client     kubernetes.Interface
		node, body string
		want       string
	}{
		"a g8s.host/ label on another node": {sa, nodeB, gpuLabel, "its token is bound to a pod on " + nodeA + ", not " + nodeB},
		"another label on its own node":     {sa, nodeA, foreignLabel, "only change g8s.host/ labels, not example.com/fake-gpu"},
		"removing another label":            {sa, nodeA, `{"metadata":{"labels":{"kubernetes.io/hostname":null}}}`, "not kubernetes.io/hostname"},
		"a taint on its own node":           {sa, nodeA, `{"spec":{"taints":[{"key":"g8s.host/evict","effect":"NoExecute"}]}}`, "may not change a Node's spec"},
		"cordoning its own node":            {sa, nodeA, `{"spec":{"unschedulable":true}}`, "may not change a Node's spec"},
		"an annotation on its own node":     {sa, nodeA, `{"metadata":{"annotations":{"g8s.host/x":"y"}}}`, "annotations"},
		"a token bound to no pod":           {clientFor(token(t, nil)), nodeA, gpuLabel, "bound to a pod on no node"},
	}
	for name, c := range refused {
		t.Run(name, func(t *testing.T) {
			err := patch(c.client, c.node, c.body, false)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want refused with %q", err, c.want)
			}
		})
	}
}

// waitEnforced waits until a known-bad request is refused by the policy (the API server's
// policy informer must have seen it first).
func waitEnforced(t *testing.T, bad func() error) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		err := bad()
		if err != nil && strings.Contains(err.Error(), "ValidatingAdmissionPolicy") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the node labeler's policy was not enforced after a minute; last answer: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
