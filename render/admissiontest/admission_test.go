package admissiontest

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/gpuctl/gpuctl/internal/keys"
)

// attack is a request that a team member's client sends to namespace alice.
type attack struct {
	create func(context.Context, kubernetes.Interface) error
	// rule is the pod policy rule that must refuse it; detail must be in the message too.
	rule, detail string
}

func createPod(p *corev1.Pod) func(context.Context, kubernetes.Interface) error {
	return func(ctx context.Context, c kubernetes.Interface) error {
		_, err := c.CoreV1().Pods(alice).Create(ctx, p, metav1.CreateOptions{})
		return err
	}
}

func withSpec(name string, edit func(*corev1.PodSpec)) *corev1.Pod {
	p := pod(name)
	edit(&p.Spec)
	return p
}

func hostPathVolume(spec *corev1.PodSpec, path string, readOnly bool) {
	spec.Volumes = []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path}}}}
	spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "host", MountPath: "/host", ReadOnly: readOnly}}
}

func attacks() map[string]attack {
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}
	template := func(edit func(*corev1.PodSpec)) corev1.PodTemplateSpec {
		t := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}}, Spec: podSpec()}
		t.Spec.RestartPolicy = corev1.RestartPolicyNever
		edit(&t.Spec)
		return t
	}
	return map[string]attack{
		"privileged pod": {create: createPod(privilegedPod("privileged")), rule: "privileged", detail: "container app"},
		"deployment mounting the host's /": {rule: "host-path", detail: "path /", create: func(ctx context.Context, c kubernetes.Interface) error {
			tpl := template(func(s *corev1.PodSpec) { hostPathVolume(s, "/", true) })
			tpl.Spec.RestartPolicy = corev1.RestartPolicyAlways
			_, err := c.AppsV1().Deployments(alice).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "root"},
				Spec: appsv1.DeploymentSpec{Selector: selector, Template: tpl}}, metav1.CreateOptions{})
			return err
		}},
		"job on the host network": {rule: "host-namespaces", detail: "hostNetwork", create: func(ctx context.Context, c kubernetes.Interface) error {
			_, err := c.BatchV1().Jobs(alice).Create(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "hostnet"},
				Spec: batchv1.JobSpec{Template: template(func(s *corev1.PodSpec) { s.HostNetwork = true })}}, metav1.CreateOptions{})
			return err
		}},
		"cronjob pinned to a node": {rule: "node-name", detail: "gpu-a100-0", create: func(ctx context.Context, c kubernetes.Interface) error {
			_, err := c.BatchV1().CronJobs(alice).Create(ctx, &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "pinned"},
				Spec: batchv1.CronJobSpec{Schedule: "*/5 * * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
					Template: template(func(s *corev1.PodSpec) { s.NodeName = "gpu-a100-0" })}}}}, metav1.CreateOptions{})
			return err
		}},
		"toleration of every taint": {rule: "tolerations", detail: "empty key", create: createPod(withSpec("tolerate-all", func(s *corev1.PodSpec) {
			s.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
		}))},
		"system-node-critical priority": {rule: "priority-class", detail: "system-node-critical", create: createPod(withSpec("critical", func(s *corev1.PodSpec) {
			s.PriorityClassName = "system-node-critical"
		}))},
		"the tenant's applying identity": {rule: "service-account", detail: "spec.serviceAccountName", create: createPod(withSpec("as-tenant", func(s *corev1.PodSpec) {
			s.ServiceAccountName = "gpuctl-tenant"
		}))},
		"service with external IPs": {rule: "external-ips", detail: "203.0.113.7", create: func(ctx context.Context, c kubernetes.Interface) error {
			_, err := c.CoreV1().Services(alice).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "hijack"}, Spec: corev1.ServiceSpec{
				Ports: []corev1.ServicePort{{Port: 80}}, ExternalIPs: []string{"203.0.113.7"}}}, metav1.CreateOptions{})
			return err
		}},
		"claim of a chosen volume": {rule: "volume-name", detail: "other-teams-data", create: func(ctx context.Context, c kubernetes.Interface) error {
			_, err := c.CoreV1().PersistentVolumeClaims(alice).Create(ctx, claim("pick", "other-teams-data"), metav1.CreateOptions{})
			return err
		}},
		"writable mount of a read-only prefix": {rule: "host-path", detail: "read-write", create: createPod(withSpec("write-datasets", func(s *corev1.PodSpec) {
			hostPathVolume(s, "/datasets/shared", false)
		}))},
		"gpuctl-high outside highPriorityNamespaces": {rule: "priority-class", detail: "gpuctl-high", create: createPod(withSpec("high", func(s *corev1.PodSpec) {
			s.PriorityClassName = keys.PriorityClassHigh
		}))},
		"statefulset claiming a chosen volume": {rule: "volume-name", detail: "volumeClaimTemplates", create: func(ctx context.Context, c kubernetes.Interface) error {
			tpl := template(func(*corev1.PodSpec) {})
			tpl.Spec.RestartPolicy = corev1.RestartPolicyAlways
			pvc := claim("data", "other-teams-data")
			_, err := c.AppsV1().StatefulSets(alice).Create(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "claims"},
				Spec: appsv1.StatefulSetSpec{Selector: selector, Template: tpl, VolumeClaimTemplates: []corev1.PersistentVolumeClaim{*pvc}}}, metav1.CreateOptions{})
			return err
		}},
	}
}

// baselineAttacks break the Pod Security "baseline" rules that attacks() does not.
func baselineAttacks() map[string]attack {
	sc := func(name string, edit func(*corev1.SecurityContext)) *corev1.Pod {
		return withSpec(name, func(s *corev1.PodSpec) {
			s.Containers[0].SecurityContext = &corev1.SecurityContext{}
			edit(s.Containers[0].SecurityContext)
		})
	}
	apparmor := pod("apparmor")
	apparmor.Annotations = map[string]string{"container.apparmor.security.beta.kubernetes.io/app": "unconfined"}
	return map[string]attack{
		"SYS_ADMIN in an init container": {rule: "capabilities", detail: "adds SYS_ADMIN", create: createPod(withSpec("caps", func(s *corev1.PodSpec) {
			s.InitContainers = []corev1.Container{{Name: "init", Image: "busybox:1.36", SecurityContext: &corev1.SecurityContext{
				Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"CHOWN", "SYS_ADMIN"}}}}}
		}))},
		"a host port": {rule: "host-ports", detail: "container app", create: createPod(withSpec("hostport", func(s *corev1.PodSpec) {
			s.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}
		}))},
		"unconfined AppArmor annotation": {rule: "apparmor", detail: "unconfined", create: createPod(apparmor)},
		"unconfined AppArmor profile": {rule: "apparmor", detail: "container app", create: createPod(sc("apparmor-field", func(c *corev1.SecurityContext) {
			c.AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
		}))},
		"an SELinux user": {rule: "selinux", detail: "pod securityContext", create: createPod(withSpec("selinux", func(s *corev1.PodSpec) {
			s.SecurityContext = &corev1.PodSecurityContext{SELinuxOptions: &corev1.SELinuxOptions{User: "system_u"}}
		}))},
		"unconfined seccomp": {rule: "seccomp", detail: "container app", create: createPod(sc("seccomp", func(c *corev1.SecurityContext) {
			c.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
		}))},
		"an unsafe sysctl": {rule: "sysctls", detail: "kernel.msgmax", create: createPod(withSpec("sysctl", func(s *corev1.PodSpec) {
			s.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "net.ipv4.tcp_syncookies", Value: "1"}, {Name: "kernel.msgmax", Value: "1"}}}
		}))},
		"a probe of another host": {rule: "host-probes", detail: "container app", create: createPod(withSpec("probe", func(s *corev1.PodSpec) {
			s.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
				Host: "169.254.169.254", Path: "/latest/meta-data/", Port: intstr.FromInt32(80)}}}
		}))},
		"a socket hostPath": {rule: "host-path", detail: "type Socket", create: createPod(withSpec("socket", func(s *corev1.PodSpec) {
			hostPathVolume(s, "/data/docker.sock", true)
			s.Volumes[0].HostPath.Type = ptr(corev1.HostPathSocket)
		}))},
	}
}

func claim(name, volume string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, VolumeName: volume,
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
}

// TestTenantAttacksRefused: each attack of a team member's plain client in a tenant namespace
// is refused by the policy, and the message names the rule and the offending value.
func TestTenantAttacksRefused(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	all := attacks()
	maps.Copy(all, baselineAttacks())
	for name, a := range all {
		t.Run(name, func(t *testing.T) {
			err := a.create(ctx, e.dev)
			if err == nil {
				t.Fatalf("allowed; want refused by pod policy %s", a.rule)
			}
			msg := err.Error()
			if !strings.Contains(msg, "pod policy "+a.rule+":") || !strings.Contains(msg, a.detail) {
				t.Errorf("refused with %q; want the rule %q and %q", msg, a.rule, a.detail)
			}
		})
	}
}

// TestUnlistedNamespaceUnaffected: the policy binds to the tenant namespaces only; gpuctl-high
// is allowed where the configuration allows it.
func TestUnlistedNamespaceUnaffected(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	if _, err := e.dev.CoreV1().Pods(unlisted).Create(ctx, privilegedPod("privileged"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("a privileged pod outside the tenant namespaces: %v", err)
	}
	if _, err := e.dev.CoreV1().Pods(bob).Create(ctx, privilegedPod("privileged"), metav1.CreateOptions{}); err == nil {
		t.Error("a privileged pod in bob, the other tenant namespace, was allowed")
	}
	high := withSpec("high", func(s *corev1.PodSpec) { s.PriorityClassName = keys.PriorityClassHigh })
	if _, err := e.dev.CoreV1().Pods(bob).Create(ctx, high, metav1.CreateOptions{}); err != nil {
		t.Errorf("gpuctl-high in bob, a highPriorityNamespace: %v", err)
	}
}

// TestBoundPodUpdates: once the scheduler has set a pod's nodeName, the pod can still be
// updated (a new image, a label) — but not given a toleration outside the policy, nor a
// privileged ephemeral container.
func TestBoundPodUpdates(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pods := e.dev.CoreV1().Pods(alice)
	if _, err := pods.Create(ctx, pod("bound"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		p, err := pods.Get(ctx, "bound", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("waiting for the pod to be scheduled: %v", err)
		}
		if p.Spec.NodeName != "" {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	// update edits the live pod; kwok updates its status meanwhile, hence the retries.
	update := func(edit func(*corev1.Pod), send func(*corev1.Pod) error) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			p, err := pods.Get(ctx, "bound", metav1.GetOptions{})
			if err != nil {
				return err
			}
			edit(p)
			return send(p)
		})
	}
	updatePod := func(p *corev1.Pod) error { _, err := pods.Update(ctx, p, metav1.UpdateOptions{}); return err }
	err := update(func(p *corev1.Pod) {
		p.Spec.Containers[0].Image = "busybox:1.37"
		p.Labels = map[string]string{"touched": "yes"}
	}, updatePod)
	if err != nil {
		t.Fatalf("update of a bound pod's image and labels: %v", err)
	}
	err = update(func(p *corev1.Pod) {
		p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Operator: corev1.TolerationOpExists})
	}, updatePod)
	if err == nil || !strings.Contains(err.Error(), "pod policy tolerations:") {
		t.Errorf("adding a toleration of every taint to a bound pod: %v, want refused by tolerations", err)
	}
	// kubectl debug --profile=sysadmin: a privileged ephemeral container (pods/ephemeralcontainers),
	// as the admin, whom the policy holds too.
	err = update(func(p *corev1.Pod) {
		p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: "debugger", Image: "busybox:1.36", SecurityContext: &corev1.SecurityContext{Privileged: ptr(true)}}}}
	}, func(p *corev1.Pod) error {
		_, err := e.admin.CoreV1().Pods(alice).UpdateEphemeralContainers(ctx, "bound", p, metav1.UpdateOptions{})
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "pod policy privileged: container debugger") {
		t.Errorf("a privileged ephemeral container: %v, want refused by privileged", err)
	}
}

// TestClaimBinding: a team member cannot bind an unbound claim to a volume of their choice by
// an update; the volume binder of kube-controller-manager can.
func TestClaimBinding(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	for who, c := range map[string]kubernetes.Interface{developer: e.dev, "the volume binder": e.as("system:serviceaccount:kube-system:persistent-volume-binder")} {
		name := "unbound-" + strings.ReplaceAll(strings.ReplaceAll(who, " ", "-"), "the-", "")
		if _, err := e.dev.CoreV1().PersistentVolumeClaims(alice).Create(ctx, claim(name, ""), metav1.CreateOptions{}); err != nil {
			t.Fatalf("an unbound claim: %v", err)
		}
		pvc, err := c.CoreV1().PersistentVolumeClaims(alice).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pvc.Spec.VolumeName = "chosen-volume"
		_, err = c.CoreV1().PersistentVolumeClaims(alice).Update(ctx, pvc, metav1.UpdateOptions{})
		switch {
		case who == developer && (err == nil || !strings.Contains(err.Error(), "pod policy volume-name:")):
			t.Errorf("%s set volumeName: %v, want refused by volume-name", who, err)
		case who != developer && err != nil:
			t.Errorf("%s set volumeName: %v", who, err)
		}
	}
}
