package admissiontest

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// Red-team attacks of a team member's kubectl that the rules added after the first review
// hold: volume types, ExternalName Services, NVIDIA_VISIBLE_DEVICES, ingress snippets.

func volumePod(name string, src corev1.VolumeSource) *corev1.Pod {
	return withSpec(name, func(s *corev1.PodSpec) {
		s.Volumes = []corev1.Volume{{Name: "v", VolumeSource: src}}
		s.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "v", MountPath: "/v", ReadOnly: true}}
	})
}

func ingress(name string, annotations map[string]string) *networkingv1.Ingress {
	return &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations},
		Spec: networkingv1.IngressSpec{DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
			Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}
}

func redTeamAttacks() map[string]attack {
	return map[string]attack{
		"an NFS export": {rule: "volume-types", detail: "volume v of type nfs", create: createPod(volumePod("nfs", corev1.VolumeSource{
			NFS: &corev1.NFSVolumeSource{Server: "10.0.0.2", Path: "/export"}}))},
		"another team's cloud disk": {rule: "volume-types", detail: "volume v of type gcePersistentDisk", create: createPod(volumePod("disk", corev1.VolumeSource{
			GCEPersistentDisk: &corev1.GCEPersistentDiskVolumeSource{PDName: "bob-disk"}}))},
		"an iSCSI target": {rule: "volume-types", detail: "volume v of type iscsi", create: createPod(volumePod("iscsi", corev1.VolumeSource{
			ISCSI: &corev1.ISCSIVolumeSource{TargetPortal: "10.0.0.1:3260", IQN: "iqn.2001-04.com.example:storage", Lun: 0}}))},
		"NVIDIA_VISIBLE_DEVICES=all": {rule: "gpu-devices", detail: "container app", create: createPod(withSpec("all-gpus", func(s *corev1.PodSpec) {
			s.Containers[0].Env = []corev1.EnvVar{{Name: "NVIDIA_VISIBLE_DEVICES", Value: "all"}}
		}))},
		"an ExternalName to the metadata endpoint": {rule: "external-name", detail: "169.254.169.254", create: func(ctx context.Context, c kubernetes.Interface) error {
			_, err := c.CoreV1().Services(alice).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "metadata"},
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "169.254.169.254"}}, metav1.CreateOptions{})
			return err
		}},
		"an nginx server snippet": {rule: "ingress-snippets", detail: "nginx.ingress.kubernetes.io/server-snippet", create: func(ctx context.Context, c kubernetes.Interface) error {
			_, err := c.NetworkingV1().Ingresses(alice).Create(ctx, ingress("snippet", map[string]string{
				"nginx.ingress.kubernetes.io/server-snippet": "location /x { alias /etc/; }"}), metav1.CreateOptions{})
			return err
		}},
	}
}

// TestRedTeamAttacksRefused: each attack of a team member's plain client is refused by the
// policy, with the rule and the offending value in the message.
func TestRedTeamAttacksRefused(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for name, a := range redTeamAttacks() {
		t.Run(name, func(t *testing.T) {
			err := a.create(ctx, e.dev)
			if err == nil {
				t.Fatalf("allowed; want refused by pod policy %s", a.rule)
			}
			if msg := err.Error(); !strings.Contains(msg, "pod policy "+a.rule+":") || !strings.Contains(msg, a.detail) {
				t.Errorf("refused with %q; want the rule %q and %q", msg, a.rule, a.detail)
			}
		})
	}
}

// TestRedTeamSnippetAddedByAnUpdate: an annotation-only update of an Ingress (the spec
// unchanged) is checked too; the volumes the API server adds (the ServiceAccount token's
// projected volume) and the allowed types pass.
func TestRedTeamSnippetAddedByAnUpdate(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ing, err := e.dev.NetworkingV1().Ingresses(alice).Create(ctx, ingress("plain", map[string]string{"team": "alice"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("an Ingress without snippets: %v", err)
	}
	ing.Annotations["nginx.ingress.kubernetes.io/configuration-snippet"] = "more_set_headers x;"
	_, err = e.dev.NetworkingV1().Ingresses(alice).Update(ctx, ing, metav1.UpdateOptions{})
	if err == nil || !strings.Contains(err.Error(), "pod policy ingress-snippets: annotation nginx.ingress.kubernetes.io/configuration-snippet") {
		t.Errorf("a snippet added by an update: %v, want refused by ingress-snippets", err)
	}
	ok := volumePod("allowed-volumes", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}})
	ok.Spec.Volumes = append(ok.Spec.Volumes,
		corev1.Volume{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "x"}}}},
		corev1.Volume{Name: "csi", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "secrets-store.csi.k8s.io"}}})
	ok.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "CUDA_VISIBLE_DEVICES", Value: "0"}}
	p, err := e.dev.CoreV1().Pods(alice).Create(ctx, ok, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a pod with allowed volumes: %v", err)
	}
	var projected bool
	for _, v := range p.Spec.Volumes {
		projected = projected || v.Projected != nil
	}
	if !projected {
		t.Error("the API server added no projected token volume; the test does not show that it passes")
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort,
		Ports: []corev1.ServicePort{{Port: 80}}}}
	if _, err := e.dev.CoreV1().Services(alice).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Errorf("a NodePort Service: %v", err)
	}
}

// TestRedTeamFieldCaseIsNotTheField: render reads field names as written (HostPID is not
// hostPID); the API server refuses such a field in a server-side apply, as gpuctl sends it,
// so a spelling that render does not check never runs.
func TestRedTeamFieldCaseIsNotTheField(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for field, body := range map[string]string{
		".spec.HostPID":     `"HostPID":true,"containers":[{"name":"app","image":"busybox:1.36"}]`,
		".spec.hostnetwork": `"hostnetwork":true,"containers":[{"name":"app","image":"busybox:1.36"}]`,
		".spec.containers[name=\"app\"].SecurityContext": `"containers":[{"name":"app","image":"busybox:1.36","SecurityContext":{"privileged":true}}]`,
	} {
		data := []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"cased"},"spec":{` + body + `}}`)
		force := true
		_, err := e.dyn.Resource(corev1.SchemeGroupVersion.WithResource("pods")).Namespace(unlisted).Patch(ctx, "cased", types.ApplyPatchType, data,
			metav1.PatchOptions{FieldManager: "redteam", Force: &force, DryRun: []string{metav1.DryRunAll}})
		if err == nil || !strings.Contains(err.Error(), field+": field not declared in schema") {
			t.Errorf("%s: %v, want refused as not declared in the schema", field, err)
		}
	}
}
