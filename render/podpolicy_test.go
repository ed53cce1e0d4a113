package render_test

import (
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/render"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sigsyaml "sigs.k8s.io/yaml"
)

// pod returns a Pod with one container; spec and container are YAML flow mappings' contents.
func pod(spec, container string) string {
	if container != "" {
		container = ", " + container
	}
	if spec != "" {
		spec = ", " + spec
	}
	return "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: x" + container + "}]" + spec + "}\n"
}

// TestCheckPodPolicy checks every rule of the pod policy on objects, and what each allows.
func TestCheckPodPolicy(t *testing.T) {
	policy := render.PodPolicy{Namespace: "alice", HostPathPrefixes: []string{"/data", "/output"},
		WritableHostPathPrefixes: []string{"/output"}}
	cases := map[string]struct {
		obj    string
		policy *render.PodPolicy
		// want lists "field rule" of each violation, in order; empty: the object passes.
		want []string
	}{
		"a plain pod": {obj: pod("", "")},
		"allowed settings": {obj: pod(`priorityClassName: gpuctl-medium, serviceAccountName: default,
			tolerations: [{key: nvidia.com/gpu, operator: Exists}, {key: g8s.host/pool, value: a}, {key: node.kubernetes.io/not-ready, effect: NoExecute, tolerationSeconds: 300}],
			securityContext: {seccompProfile: {type: RuntimeDefault}, sysctls: [{name: net.ipv4.tcp_syncookies, value: "1"}], seLinuxOptions: {type: container_t}},
			volumes: [{name: d, hostPath: {path: /data/x/, type: Directory}}, {name: o, hostPath: {path: /output/x}}]`,
			`securityContext: {capabilities: {add: [CHOWN]}, procMount: Default, appArmorProfile: {type: Localhost, localhostProfile: p}},
			ports: [{containerPort: 80, hostPort: 0}], volumeMounts: [{name: d, mountPath: /d, readOnly: true}, {name: o, mountPath: /o}]`)},
		"not-ready with NoSchedule": {obj: pod("tolerations: [{key: node.kubernetes.io/not-ready, effect: NoSchedule}]", ""),
			want: []string{"spec.tolerations[0].key tolerations"}},
		"the bare g8s.host/ prefix": {obj: pod("tolerations: [{key: g8s.host/, operator: Exists}]", ""),
			want: []string{"spec.tolerations[0].key tolerations"}},
		"gpuctl-high where not allowed": {obj: pod("priorityClassName: gpuctl-high", ""),
			want: []string{"spec.priorityClassName priority-class"}},
		"gpuctl-high where allowed": {obj: pod("priorityClassName: gpuctl-high", ""),
			policy: &render.PodPolicy{AllowHighPriority: true}},
		"any declared-or-not account when the policy lists none": {obj: pod("serviceAccountName: builder", "")},
		"the applying identity even then": {obj: pod("serviceAccountName: gpuctl-tenant", ""),
			want: []string{"spec.serviceAccountName service-account"}},
		"AppArmor": {obj: strings.Replace(pod("", "securityContext: {appArmorProfile: {type: Unconfined}}"), "{name: p}",
			"{name: p, annotations: {container.apparmor.security.beta.kubernetes.io/c: unconfined, container.apparmor.security.beta.kubernetes.io/d: localhost/x}}", 1),
			want: []string{"metadata.annotations[container.apparmor.security.beta.kubernetes.io/c] apparmor",
				"spec.containers[0].securityContext.appArmorProfile.type apparmor"}},
		"SELinux": {obj: pod("securityContext: {seLinuxOptions: {type: spc_t, user: system_u, role: system_r}}", ""),
			want: []string{"spec.securityContext.seLinuxOptions.type selinux", "spec.securityContext.seLinuxOptions.user selinux",
				"spec.securityContext.seLinuxOptions.role selinux"}},
		"Windows host process": {obj: pod("", "securityContext: {windowsOptions: {hostProcess: true}}"),
			want: []string{"spec.containers[0].securityContext.windowsOptions.hostProcess host-process"}},
		"init and ephemeral containers": {obj: pod(`initContainers: [{name: i, image: x, securityContext: {privileged: true}}],
			ephemeralContainers: [{name: e, image: x, securityContext: {capabilities: {add: [SYS_PTRACE]}}}]`, ""),
			want: []string{"spec.initContainers[0].securityContext.privileged privileged",
				"spec.ephemeralContainers[0].securityContext.capabilities.add[0] capabilities"}},
		"values of the wrong type count as set": {obj: pod(`hostNetwork: "true", nodeName: 7`, `securityContext: {capabilities: {add: SYS_ADMIN}}`),
			want: []string{"spec.hostNetwork host-namespaces", "spec.nodeName node-name", "spec.containers[0].securityContext.capabilities.add capabilities"}},
		"a relative hostPath": {obj: pod("volumes: [{name: d, hostPath: {path: data}}]", ""),
			want: []string{"spec.volumes[0].hostPath.path host-path"}},
		"a prefix look-alike": {obj: pod("volumes: [{name: d, hostPath: {path: /database}}]", ""),
			want: []string{"spec.volumes[0].hostPath.path host-path"}},
		"a writable mount in an init container": {obj: pod(`volumes: [{name: d, hostPath: {path: /data}}],
			initContainers: [{name: i, image: x, volumeMounts: [{name: d, mountPath: /d}]}]`, ""),
			want: []string{"spec.initContainers[0].volumeMounts[0].readOnly host-path"}},
		"an ephemeral claim of a named volume": {obj: pod("volumes: [{name: v, ephemeral: {volumeClaimTemplate: {spec: {volumeName: pv-1}}}}]", ""),
			want: []string{"spec.volumes[0].ephemeral.volumeClaimTemplate.spec.volumeName volume-name"}},
		"a StatefulSet claim template of a named volume": {obj: `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: s}
spec: {template: {spec: {hostIPC: true}}, volumeClaimTemplates: [{metadata: {name: d}, spec: {volumeName: pv-1}}]}`,
			want: []string{"spec.volumeClaimTemplates[0].spec.volumeName volume-name", "spec.template.spec.hostIPC host-namespaces"}},
		"a DaemonSet":               {obj: "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: d}\nspec: {template: {spec: {hostPID: true}}}\n", want: []string{"spec.template.spec.hostPID host-namespaces"}},
		"a ReplicaSet":              {obj: "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: d}\nspec: {template: {spec: {hostPID: true}}}\n", want: []string{"spec.template.spec.hostPID host-namespaces"}},
		"a ReplicationController":   {obj: "apiVersion: v1\nkind: ReplicationController\nmetadata: {name: d}\nspec: {template: {spec: {hostPID: true}}}\n", want: []string{"spec.template.spec.hostPID host-namespaces"}},
		"a Job":                     {obj: "apiVersion: batch/v1\nkind: Job\nmetadata: {name: d}\nspec: {template: {spec: {hostPID: true}}}\n", want: []string{"spec.template.spec.hostPID host-namespaces"}},
		"an empty externalIPs list": {obj: "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {externalIPs: []}\n"},
		"probes and hooks naming a host": {obj: pod("", `livenessProbe: {httpGet: {host: 169.254.169.254, path: /, port: 80}},
			readinessProbe: {tcpSocket: {port: 80, host: ""}}, lifecycle: {preStop: {tcpSocket: {host: 10.0.0.1, port: 22}}}`),
			want: []string{"spec.containers[0].livenessProbe.httpGet.host host-probes", "spec.containers[0].lifecycle.preStop.tcpSocket.host host-probes"}},
		"a kind that runs no pods": {obj: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {spec: x}\n"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var u unstructured.Unstructured
			if err := sigsyaml.Unmarshal([]byte(tc.obj), &u.Object); err != nil {
				t.Fatal(err)
			}
			p := policy
			if tc.policy != nil {
				p = *tc.policy
			}
			var got []string
			for _, v := range render.CheckPodPolicy(&u, p) {
				got = append(got, v.Field+" "+v.Rule)
				if v.Message == "" || strings.Contains(v.String(), "\n") {
					t.Errorf("violation %q: empty or multi-line message", v.String())
				}
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("violations:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
			}
		})
	}
}

// TestConfigPodPolicy: the configuration's policy of a namespace, with its defaults.
func TestConfigPodPolicy(t *testing.T) {
	cfg, diags := render.ParseConfig("c.yaml", []byte("tenancy: {highPriorityNamespaces: [alice]}\n"))
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	a, b := cfg.PodPolicy("alice"), cfg.PodPolicy("bob")
	if !a.AllowHighPriority || b.AllowHighPriority || a.ServiceAccounts != nil {
		t.Errorf("alice %+v, bob %+v", a, b)
	}
	if strings.Join(a.HostPathPrefixes, ",") != "/datasets,/models,/output,/cache,/data" || strings.Join(a.WritableHostPathPrefixes, ",") != "/output,/cache" {
		t.Errorf("defaults: %+v", a)
	}
	if !(*render.Config)(nil).PodPolicy("x").AllowHighPriority {
		t.Error("without a configuration every namespace may use gpuctl-high")
	}
	for ns, want := range map[string]bool{"default": true, "kube-public": true, keys.SystemNamespace: true, "alice": false, "kubeflow": false} {
		if cfg.ReservedNamespace(ns) != want {
			t.Errorf("ReservedNamespace(%q) = %v", ns, !want)
		}
	}
}
