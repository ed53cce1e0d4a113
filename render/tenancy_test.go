package render_test

import (
	"maps"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	"github.com/gpuctl/gpuctl/render"
)

// tenantConfig maps every directory below teams/ to the namespace of its name.
const tenantConfig = "namespaces:\n  - path: teams/*/**\n    namespace: $1\n"

// deployment is a plain Deployment; container lines go below `image: nginx` (line 12) and
// pod spec lines after them, each indented for its place.
func deployment(container, pod string) string {
	return "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n" +
		"  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n" +
		"    spec:\n      containers:\n        - name: main\n          image: nginx\n" +
		indent(container, 10) + indent(pod, 6)
}

func indent(s string, n int) string {
	if s == "" {
		return ""
	}
	pad := strings.Repeat(" ", n)
	return pad + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n"+pad) + "\n"
}

type tenancyCase struct {
	// files are written below /repo, with tenantConfig as .gpuctl.yaml unless given.
	files map[string]string
	// want are the exact errors of the render (file:line:col: field: message), in order.
	want []string
	// admin, when set, says the same attack files also render from an unmapped directory.
	admin bool
	// badName marks a name that no directory may hold, the admin's included.
	badName bool
}

// tenantAttacks are the attacks of a team that writes teams/alice/ (issue "Tenancy that
// holds", findings 1, 2, 5, 6 and 10); each must be refused with its file:line, field and rule.
func tenantAttacks() map[string]tenancyCase {
	const evil = "/repo/teams/alice/evil.yaml"
	const tmpl = "spec.template.spec."
	one := func(content string) map[string]string { return map[string]string{"teams/alice/evil.yaml": content} }
	cases := map[string]tenancyCase{
		// Finding 1: pod templates of plain manifests.
		"privileged": {admin: true, files: one(deployment("securityContext: {privileged: true}", "")),
			want: []string{evil + ":13:41: " + tmpl + "containers[0].securityContext.privileged: pod policy privileged: privileged containers are not allowed in a tenant directory"}},
		"hostPath /": {admin: true, files: one(deployment("volumeMounts: [{name: root, mountPath: /host}]", "volumes: [{name: root, hostPath: {path: /}}]")),
			want: []string{
				evil + ":13:26: " + tmpl + `containers[0].volumeMounts[0].readOnly: pod policy host-path: host path "/" must be mounted read-only: only paths below /output, /cache are writable`,
				evil + ":14:47: " + tmpl + `volumes[0].hostPath.path: pod policy host-path: host path "/" is outside the allowed prefixes (/datasets, /models, /output, /cache, /data)`}},
		"hostPID": {admin: true, files: one(deployment("", "hostPID: true")),
			want: []string{evil + ":13:16: " + tmpl + "hostPID: pod policy host-namespaces: the host's namespaces are not allowed in a tenant directory"}},
		"hostNetwork": {admin: true, files: one(deployment("", "hostNetwork: true")),
			want: []string{evil + ":13:20: " + tmpl + "hostNetwork: pod policy host-namespaces: the host's namespaces are not allowed in a tenant directory"}},
		"hostIPC": {admin: true, files: one(deployment("", "hostIPC: true")),
			want: []string{evil + ":13:16: " + tmpl + "hostIPC: pod policy host-namespaces: the host's namespaces are not allowed in a tenant directory"}},
		"nodeName of another pool's node": {admin: true, files: one(deployment("", "nodeName: gpu-h100-0")),
			want: []string{evil + ":13:17: " + tmpl + "nodeName: pod policy node-name: a tenant cannot place pods on a node by name; pools place them"}},
		"toleration of every taint": {admin: true, files: one(deployment("", "tolerations: [{operator: Exists}]")),
			want: []string{evil + ":13:21: " + tmpl + "tolerations[0]: pod policy tolerations: a toleration without a key tolerates every taint"}},
		"system priority class": {admin: true, files: one(deployment("", "priorityClassName: system-node-critical")),
			want: []string{evil + ":13:26: " + tmpl + "priorityClassName: pod policy priority-class: only the priority classes gpuctl-low, gpuctl-medium and gpuctl-high are allowed"}},
		"the applying identity": {admin: true, files: one(deployment("", "serviceAccountName: gpuctl-tenant")),
			want: []string{evil + ":13:27: " + tmpl + "serviceAccountName: pod policy service-account: gpuctl-tenant is the identity that applies the namespace; pods may not run as it"}},
		"an undeclared service account": {admin: true, files: one(deployment("", "serviceAccount: cluster-admin-sa")),
			want: []string{evil + ":13:23: " + tmpl + `serviceAccount: pod policy service-account: ServiceAccount "cluster-admin-sa" is not declared in the tenant's directories`}},
		"external IPs": {admin: true, files: one("apiVersion: v1\nkind: Service\nmetadata: {name: mitm}\nspec:\n  ports: [{port: 443}]\n  externalIPs: [10.0.0.1]\n"),
			want: []string{evil + ":6:16: spec.externalIPs: pod policy external-ips: a Service may not claim external IPs: it would take traffic for any address"}},
		"claim of a named volume": {admin: true, files: one("apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: steal}\nspec:\n  volumeName: bob-data\n  accessModes: [ReadWriteOnce]\n"),
			want: []string{evil + ":5:15: spec.volumeName: pod policy volume-name: a claim may not bind a PersistentVolume by name: it could take another tenant's volume"}},
		"SYS_ADMIN": {admin: true, files: one(deployment("securityContext:\n  capabilities: {add: [NET_BIND_SERVICE, SYS_ADMIN]}", "")),
			want: []string{evil + ":14:52: " + tmpl + "containers[0].securityContext.capabilities.add[1]: pod policy capabilities: only the capabilities of the Pod Security baseline may be added (AUDIT_WRITE, CHOWN, DAC_OVERRIDE, FOWNER, FSETID, KILL, MKNOD, NET_BIND_SERVICE, SETFCAP, SETGID, SETPCAP, SETUID, SYS_CHROOT)"}},
		"seccomp unconfined": {admin: true, files: one(deployment("", "securityContext:\n  seccompProfile:\n    type: Unconfined")),
			want: []string{evil + ":15:17: " + tmpl + "securityContext.seccompProfile.type: pod policy seccomp: the seccomp profile may not be Unconfined"}},
		"unsafe sysctl": {admin: true, files: one(deployment("", "securityContext:\n  sysctls: [{name: kernel.core_pattern, value: '|/bin/sh'}]")),
			want: []string{evil + ":14:26: " + tmpl + "securityContext.sysctls[0].name: pod policy sysctls: only the sysctls of the Pod Security baseline are allowed"}},
		"host port": {admin: true, files: one(deployment("ports: [{containerPort: 80, hostPort: 80}]", "")),
			want: []string{evil + ":13:49: " + tmpl + "containers[0].ports[0].hostPort: pod policy host-ports: host ports are not allowed in a tenant directory"}},
		"a CronJob": {admin: true, files: one("apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: nightly}\nspec:\n  schedule: '@daily'\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          restartPolicy: Never\n          hostNetwork: true\n          containers: [{name: c, image: busybox}]\n"),
			want: []string{evil + ":11:24: spec.jobTemplate.spec.template.spec.hostNetwork: pod policy host-namespaces: the host's namespaces are not allowed in a tenant directory"}},
		"a privileged Pod": {admin: true, files: one("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n    - name: c\n      image: busybox\n      securityContext: {privileged: true, procMount: Unmasked}\n"),
			want: []string{
				evil + ":8:37: spec.containers[0].securityContext.privileged: pod policy privileged: privileged containers are not allowed in a tenant directory",
				evil + ":8:54: spec.containers[0].securityContext.procMount: pod policy proc-mount: only the Default proc mount is allowed"}},
		"kustomize patch making a Deployment privileged": {admin: true, files: map[string]string{
			"teams/alice/web.yaml": deployment("", ""),
			"teams/alice/kustomization.yaml": "resources: [web.yaml]\npatches:\n  - target: {kind: Deployment, name: web}\n    patch: |-\n" +
				"      - {op: add, path: /spec/template/spec/containers/0/securityContext, value: {privileged: true}}\n"},
			want: []string{"/repo/teams/alice/kustomization.yaml: " + tmpl + "containers[0].securityContext.privileged: kustomize output Deployment alice/web: pod policy privileged: privileged containers are not allowed in a tenant directory"}},
		"privileged file below a kustomization": {files: map[string]string{
			"teams/alice/web.yaml":           deployment("securityContext: {privileged: true}", ""),
			"teams/alice/kustomization.yaml": "resources: [web.yaml]\n"},
			want: []string{"/repo/teams/alice/web.yaml:13:41: " + tmpl + "containers[0].securityContext.privileged: pod policy privileged: privileged containers are not allowed in a tenant directory"}},

		// Finding 2: a directory name becomes any namespace.
		"teams/kube-system": {files: map[string]string{"teams/kube-system/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"},
			want: []string{`/repo/teams/kube-system/cm.yaml:1:1: tenancy reserved-namespace: the mapping .gpuctl.yaml namespaces[0] gives teams/kube-system/ the namespace "kube-system", which is reserved: default, kube-* and the system namespace gpuctl-system never hold a tenant's objects`}},
		"teams/default": {files: map[string]string{"teams/default/job.yaml": training},
			want: []string{`/repo/teams/default/job.yaml:1:1: tenancy reserved-namespace: the mapping .gpuctl.yaml namespaces[0] gives teams/default/ the namespace "default", which is reserved: default, kube-* and the system namespace gpuctl-system never hold a tenant's objects`}},
		"teams/gpuctl-system": {files: map[string]string{"teams/gpuctl-system/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: gpuctl-status}\n"},
			want: []string{`/repo/teams/gpuctl-system/cm.yaml:1:1: tenancy reserved-namespace: the mapping .gpuctl.yaml namespaces[0] gives teams/gpuctl-system/ the namespace "gpuctl-system", which is reserved: default, kube-* and the system namespace gpuctl-system never hold a tenant's objects`}},
		"a configured system namespace": {files: map[string]string{
			".gpuctl.yaml":            tenantConfig + "systemNamespace: platform\n",
			"teams/platform/job.yaml": training},
			want: []string{`/repo/teams/platform/job.yaml:1:1: tenancy reserved-namespace: the mapping .gpuctl.yaml namespaces[0] gives teams/platform/ the namespace "platform", which is reserved: default, kube-* and the system namespace platform never hold a tenant's objects`}},
		"outside allowedNamespaces": {files: map[string]string{
			".gpuctl.yaml":          tenantConfig + "tenancy:\n  allowedNamespaces: [team-*]\n",
			"teams/alice/job.yaml":  training,
			"teams/team-a/job.yaml": training},
			want: []string{`/repo/teams/alice/job.yaml:1:1: tenancy allowed-namespaces: the mapping .gpuctl.yaml namespaces[0] gives teams/alice/ the namespace "alice", which is not matched by tenancy.allowedNamespaces (team-*)`}},
		"a literal rule to kube-system": {files: map[string]string{".gpuctl.yaml": "namespaces:\n  - path: ops/**\n    namespace: kube-system\n"},
			want: []string{`/repo/.gpuctl.yaml:3:16: namespaces[0].namespace: tenancy reserved-namespace: namespace "kube-system" is reserved: default, kube-* and the system namespace gpuctl-system never hold a tenant's objects`}},

		// Finding 6: kinds outside the allow-list.
		"ValidatingAdmissionPolicyBinding": {admin: true, files: one("apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\nmetadata: {name: off}\nspec: {policyName: gpuctl-tenant-pod-policy, validationActions: [Audit]}\n"),
			want: []string{evil + ":2:7: kind: tenancy kinds: ValidatingAdmissionPolicyBinding.admissionregistration.k8s.io is not a kind that a tenant directory (teams/alice/) may hold, an admin may allow a namespaced kind in tenancy.kinds of .gpuctl.yaml"}},
		"MutatingAdmissionPolicy": {admin: true, files: one("apiVersion: admissionregistration.k8s.io/v1beta1\nkind: MutatingAdmissionPolicy\nmetadata: {name: m}\n"),
			want: []string{evil + ":2:7: kind: tenancy kinds: MutatingAdmissionPolicy.admissionregistration.k8s.io is not a kind that a tenant directory (teams/alice/) may hold, an admin may allow a namespaced kind in tenancy.kinds of .gpuctl.yaml"}},
		"DeviceClass": {admin: true, files: one("apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: all-gpus}\n"),
			want: []string{evil + ":2:7: kind: tenancy kinds: DeviceClass.resource.k8s.io is not a kind that a tenant directory (teams/alice/) may hold, an admin may allow a namespaced kind in tenancy.kinds of .gpuctl.yaml"}},
		"FlowSchema": {admin: true, files: one("apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata: {name: starve}\n"),
			want: []string{evil + ":2:7: kind: tenancy kinds: FlowSchema.flowcontrol.apiserver.k8s.io is not a kind that a tenant directory (teams/alice/) may hold, an admin may allow a namespaced kind in tenancy.kinds of .gpuctl.yaml"}},
		"CertificateSigningRequest": {admin: true, files: one("apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata: {name: node-csr}\n"),
			want: []string{evil + ":2:7: kind: tenancy kinds: CertificateSigningRequest.certificates.k8s.io is not a kind that a tenant directory (teams/alice/) may hold, an admin may allow a namespaced kind in tenancy.kinds of .gpuctl.yaml"}},
		"a CRD-defined kind": {admin: true, files: one("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n"),
			want: []string{evil + ":2:7: kind: tenancy kinds: Widget.example.com is not a kind that a tenant directory (teams/alice/) may hold, an admin may allow a namespaced kind in tenancy.kinds of .gpuctl.yaml"}},
		"Role and RoleBinding": {admin: true, files: one("apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: r}\n---\n" +
			"apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: rb}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\n"),
			want: []string{
				evil + ":2:7: kind: tenancy kinds: Role.rbac.authorization.k8s.io is not a kind that a tenant directory (teams/alice/) may hold, an admin may allow a namespaced kind in tenancy.kinds of .gpuctl.yaml",
				evil + ":6:7: kind: tenancy kinds: RoleBinding.rbac.authorization.k8s.io is not a kind that a tenant directory (teams/alice/) may hold, an admin may allow a namespaced kind in tenancy.kinds of .gpuctl.yaml"}},
		"a Pod of another group": {files: one("apiVersion: evil.io/v1\nkind: Pod\nmetadata: {name: p}\n"),
			want: []string{evil + ":2:7: kind: tenancy kinds: Pod.evil.io is not a kind that a tenant directory (teams/alice/) may hold, an admin may allow a namespaced kind in tenancy.kinds of .gpuctl.yaml"}},
		"a List": {files: one("apiVersion: v1\nkind: List\nmetadata: {name: l}\nitems: [{apiVersion: v1, kind: Namespace, metadata: {name: x}}]\n"),
			want: []string{evil + ":2:7: kind: tenancy kinds: List is not a kind that a tenant directory (teams/alice/) may hold, an admin may allow a namespaced kind in tenancy.kinds of .gpuctl.yaml"}},
		"kustomize output of a cluster-scoped kind": {admin: true, files: map[string]string{
			"teams/alice/kustomization.yaml": "resources: [crb.yaml]\n",
			"teams/alice/crb.yaml":           "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: own}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\n"},
			want: []string{"/repo/teams/alice/kustomization.yaml: kind: kustomize output ClusterRoleBinding own: tenancy kinds: ClusterRoleBinding.rbac.authorization.k8s.io is not a kind that a tenant directory (teams/alice/) may hold"}},
		"the tenant identity declared by a tenant": {files: one("apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: gpuctl-tenant}\n"),
			want: []string{evil + `:3:18: metadata.name: tenancy reserved-name: ServiceAccount gpuctl-tenant is the tenant identity that gpuctl renders for namespace "alice"; choose another name`}},
		"a token Secret of the tenant identity": {admin: true, files: one("apiVersion: v1\nkind: Secret\ntype: kubernetes.io/service-account-token\n" +
			"metadata:\n  name: t\n  annotations:\n    kubernetes.io/service-account.name: gpuctl-tenant\n"),
			want: []string{evil + ":7:41: metadata.annotations[kubernetes.io/service-account.name]: tenancy reserved-name: a token Secret of the tenant identity gpuctl-tenant would hand its credentials to the namespace"}},
		"the adopt annotation": {admin: true, files: one("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: limits\n  annotations: {g8s.host/adopt: \"true\"}\n"),
			want: []string{evil + ":5:33: metadata.annotations[g8s.host/adopt]: tenancy reserved-annotation: only an admin marks a live object adoptable, never a tenant's file"}},
		// gpuctl's own bookkeeping, forged by a team: sealed would make the engine skip the
		// object (never applied), secret-refs would steer the plan's Secret checks, and
		// spec-digest and kept-hash would make a sync keep a live Job it should update.
		"the encrypted annotation": {admin: true, files: one("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: limits\n  annotations: {g8s.host/encrypted: sealed}\n"),
			want: []string{evil + ":5:37: metadata.annotations[g8s.host/encrypted]: tenancy reserved-annotation: gpuctl's own record (a file rendered without its SOPS key), never a tenant's file"}},
		"the secret-refs annotation": {admin: true, files: one("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: limits\n  annotations: {g8s.host/secret-refs: '[]'}\n"),
			want: []string{evil + ":5:39: metadata.annotations[g8s.host/secret-refs]: tenancy reserved-annotation: gpuctl's own record (a workload's Secret references), never a tenant's file"}},
		"the spec-digest annotation": {admin: true, files: one("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: limits\n  annotations: {g8s.host/spec-digest: abc}\n"),
			want: []string{evil + ":5:39: metadata.annotations[g8s.host/spec-digest]: tenancy reserved-annotation: gpuctl's own record (a training job's spec digest), never a tenant's file"}},
		"the kept-hash annotation": {admin: true, files: one("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: limits\n  annotations: {g8s.host/kept-hash: abc}\n"),
			want: []string{evil + ":5:37: metadata.annotations[g8s.host/kept-hash]: tenancy reserved-annotation: gpuctl's own record (an object a sync kept as it is), never a tenant's file"}},
		"the tenant identity built by kustomize": {files: map[string]string{
			"teams/alice/kustomization.yaml": "resources: [sa.yaml]\nnameSuffix: -tenant\n",
			"teams/alice/sa.yaml":            "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: gpuctl}\n"},
			want: []string{`/repo/teams/alice/kustomization.yaml: metadata.name: kustomize output ServiceAccount gpuctl-tenant: tenancy reserved-name: ServiceAccount gpuctl-tenant is the tenant identity that gpuctl renders for namespace "alice"; choose another name`}},

		// Finding 5: workdirs.
		"a workdir with ..": {files: map[string]string{"teams/alice/job.yaml": training + "storage: {workdirs: [{path: /output/alice/../../etc}]}\n"},
			want: []string{`/repo/teams/alice/job.yaml:9:29: storage.workdirs[0].path: "/output/alice/../../etc" must be a clean path without ., .. or //`}},
		"a workdir under /home": {files: map[string]string{"teams/alice/job.yaml": training + "storage: {workdirs: [{path: /home/alice/.ssh}]}\n"},
			want: []string{`/repo/teams/alice/job.yaml:9:29: storage.workdirs[0].path: "/home/alice/.ssh" is outside the allowed host paths, allowed: /datasets, /models, /output, /cache, /data (reconciler setting hostPathPrefixes)`}},
		"a hostPath mounted read-write below a read-only prefix": {files: one(deployment("volumeMounts: [{name: d, mountPath: /d, readOnly: false}]", "volumes: [{name: d, hostPath: {path: /data/alice/x, type: DirectoryOrCreate}}]")),
			want: []string{evil + ":13:61: " + tmpl + `containers[0].volumeMounts[0].readOnly: pod policy host-path: host path "/data/alice/x" must be mounted read-only: only paths below /output, /cache are writable`}},
		"a hostPath with ..": {files: one(deployment("volumeMounts: [{name: d, mountPath: /d, readOnly: true}]", "volumes: [{name: d, hostPath: {path: /output/../etc}}]")),
			want: []string{evil + ":14:44: " + tmpl + `volumes[0].hostPath.path: pod policy host-path: host path "/output/../etc" may not have a .. segment`}},
		"a hostPath of a socket": {files: one(deployment("volumeMounts: [{name: d, mountPath: /d, readOnly: true}]", "volumes: [{name: d, hostPath: {path: /data/docker.sock, type: Socket}}]")),
			want: []string{evil + ":14:69: " + tmpl + "volumes[0].hostPath.type: pod policy host-path: only the hostPath types Directory, DirectoryOrCreate, File and FileOrCreate are allowed"}},

		// Finding 10: names that break out of a line or a Markdown comment.
		"a name with a newline": {admin: true, badName: true, files: one("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: \"x\\n## LGTM, merging\"\n"),
			want: []string{evil + `:4:9: metadata.name: "x\n## LGTM, merging" is not a valid ConfigMap name: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`}},
		"a Service name with a dot": {admin: true, badName: true, files: one("apiVersion: v1\nkind: Service\nmetadata: {name: a.b}\n"),
			want: []string{evil + `:3:18: metadata.name: "a.b" is not a valid Service name: must not contain dots`}},
		"a namespace with markdown": {admin: true, badName: true, files: one("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: '**alice**'}\n"),
			want: []string{evil + `:3:32: metadata.namespace: "**alice**" is not a valid namespace name: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`}},
		"a kind with a newline": {admin: true, badName: true, files: one("apiVersion: v1\nkind: \"ConfigMap\\n| x |\"\nmetadata: {name: c}\n"),
			want: []string{evil + `:2:7: kind: "ConfigMap\n| x |" is not a valid kind: letters and digits only, starting with a letter`}},
	}
	maps.Copy(cases, kueueTenantAttacks())
	maps.Copy(cases, queueBypassAttacks())
	return cases
}

// errorsOf renders files (adding the tenant configuration) and returns the errors' text.
func errorsOf(t *testing.T, files map[string]string) (*render.Result, []string) {
	t.Helper()
	all := map[string]string{".gpuctl.yaml": tenantConfig}
	for k, v := range files {
		all[k] = v
	}
	res, _ := renderFiles(t, all)
	var got []string
	for _, d := range res.Errors() {
		got = append(got, d.Error())
	}
	return res, got
}

// TestTenantAttacks: each attack is refused with exactly the expected errors.
func TestTenantAttacks(t *testing.T) {
	for name, tc := range tenantAttacks() {
		t.Run(name, func(t *testing.T) {
			res, got := errorsOf(t, tc.files)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("errors:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
			}
			if len(res.Objects) != 0 {
				t.Errorf("a refused tree rendered %d objects", len(res.Objects))
			}
		})
	}
}

// TestAdminDirectoryIsTrusted: the same files (of the tenant attacks and the red-team attacks
// marked admin) in a directory that no rule maps render (the admin is trusted), except names,
// which no directory may break.
func TestAdminDirectoryIsTrusted(t *testing.T) {
	cases := tenantAttacks()
	for name, tc := range redTeamAttacks() {
		cases["red team: "+name] = tc
	}
	for name, tc := range cases {
		if !tc.admin {
			continue
		}
		t.Run(name, func(t *testing.T) {
			files := map[string]string{}
			for k, v := range tc.files {
				files[strings.Replace(k, "teams/alice/", "platform/", 1)] = v
			}
			_, got := errorsOf(t, files)
			if tc.badName && len(got) != 1 {
				t.Errorf("a bad name must be refused in admin directories too; errors: %q", got)
			}
			if !tc.badName && len(got) != 0 {
				t.Errorf("an admin directory is trusted; errors:\n  %s", strings.Join(got, "\n  "))
			}
		})
	}
}

// TestTenantObjectsAreMarked: every object of a tenant directory carries keys.Tenant (what the
// file wrote is overwritten); each tenant namespace gets its identity, which is the admin's.
func TestTenantObjectsAreMarked(t *testing.T) {
	res, got := errorsOf(t, map[string]string{
		"teams/alice/job.yaml":           training,
		"teams/alice/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, annotations: {g8s.host/tenant: bob}}\n",
		"teams/alice/sa.yaml":            "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: builder}\n",
		"teams/alice/pod.yaml":           "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {serviceAccountName: builder, containers: [{name: c, image: busybox}]}\n",
		"teams/bob/k/kustomization.yaml": "resources: [cm.yaml]\nnamePrefix: k-\n",
		"teams/bob/k/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
		"platform/cm.yaml":               "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: ops}\n",
	})
	if len(got) > 0 {
		t.Fatalf("errors: %q", got)
	}
	tenants := map[string]string{}
	var identities []string
	for _, o := range res.Objects {
		id := object.RefOf(o).String()
		tenants[id] = o.GetAnnotations()[keys.Tenant]
		if o.GetName() == keys.TenantServiceAccount {
			identities = append(identities, id+" "+o.GetAnnotations()[keys.Source])
		}
	}
	for id, want := range map[string]string{
		"Job alice/sft": "alice", "ConfigMap alice/c": "alice", "ServiceAccount alice/builder": "alice",
		"Pod alice/p": "alice", "ConfigMap bob/k-c": "bob", "ConfigMap ops/c": "",
		"ServiceAccount alice/gpuctl-tenant": "", "RoleBinding bob/gpuctl-tenant": "", "PriorityClass gpuctl-high": "",
	} {
		if got, ok := tenants[id]; !ok || got != want {
			t.Errorf("%s: tenant annotation %q (rendered: %v), want %q", id, got, ok, want)
		}
	}
	sort.Strings(identities)
	want := "RoleBinding alice/gpuctl-tenant .gpuctl.yaml,RoleBinding bob/gpuctl-tenant .gpuctl.yaml," +
		"ServiceAccount alice/gpuctl-tenant .gpuctl.yaml,ServiceAccount bob/gpuctl-tenant .gpuctl.yaml"
	if strings.Join(identities, ",") != want {
		t.Errorf("identities: %v\nwant %s", identities, want)
	}
	for _, o := range res.Objects {
		if o.GetKind() == "RoleBinding" {
			ref := o.Object["roleRef"].(map[string]any)["name"]
			subj := o.Object["subjects"].([]any)[0].(map[string]any)
			if ref != keys.TenantClusterRole || subj["name"] != keys.TenantServiceAccount || subj["namespace"] != o.GetNamespace() {
				t.Errorf("%s binds %s to %v", object.RefOf(o).String(), ref, subj)
			}
		}
	}
}

// TestTenantIdentityCollision: an admin file that declares a tenant's identity collides with
// the one gpuctl renders, with an error that names both files.
func TestTenantIdentityCollision(t *testing.T) {
	_, got := errorsOf(t, map[string]string{
		"teams/alice/job.yaml": training,
		"platform/sa.yaml":     "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: gpuctl-tenant, namespace: alice}\n",
	})
	want := "/repo/.gpuctl.yaml: ServiceAccount alice/gpuctl-tenant is rendered twice: also from /repo/platform/sa.yaml:1"
	if strings.Join(got, "\n") != want {
		t.Errorf("errors: %q\nwant %q", got, want)
	}
}

// TestWorkdirMounts: workdirs are read-only (hostPath type Directory, which must exist) unless
// below a writable prefix (DirectoryOrCreate, read-write); files stay File.
func TestWorkdirMounts(t *testing.T) {
	res, got := errorsOf(t, map[string]string{"teams/alice/job.yaml": training +
		"storage:\n  workdirs: [{path: /datasets/x}, {path: /output/alice}, {path: /cache}, {path: /models/m.safetensors}, {path: /output/a.json}]\n"})
	if len(got) > 0 {
		t.Fatalf("errors: %q", got)
	}
	var job map[string]any
	for _, o := range res.Objects {
		if o.GetKind() == "Job" {
			job = o.Object
		}
	}
	spec := job["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	mounts := spec["containers"].([]any)[0].(map[string]any)["volumeMounts"].([]any)
	var lines []string
	for i, v := range spec["volumes"].([]any) {
		hp, ok := v.(map[string]any)["hostPath"].(map[string]any)
		if !ok {
			continue // /dev/shm
		}
		m := mounts[i].(map[string]any)
		lines = append(lines, hp["path"].(string)+" "+hp["type"].(string)+" readOnly="+boolString(m["readOnly"]))
	}
	want := "/datasets/x Directory readOnly=true,/output/alice DirectoryOrCreate readOnly=false,/cache DirectoryOrCreate readOnly=false," +
		"/models/m.safetensors File readOnly=true,/output/a.json File readOnly=false"
	if strings.Join(lines, ",") != want {
		t.Errorf("workdirs:\n  %s\nwant\n  %s", strings.Join(lines, ","), want)
	}
}

func boolString(v any) string {
	if v == true {
		return "true"
	}
	return "false"
}

// TestTenancyConfig: the tenancy settings of .gpuctl.yaml are validated with their line.
func TestTenancyConfig(t *testing.T) {
	_, diags := render.ParseConfig(".gpuctl.yaml", []byte(`hostPathPrefixes: [/data, /output]
writableHostPathPrefixes: [/output/runs, /cache, output, /]
tenancy:
  allowedNamespaces: ["team-[", team-*]
  kinds: [Job.batch, ClusterRole.rbac.authorization.k8s.io, job, Namespace, Widget.example.com]
  highPriorityNamespaces: [Alice]
  controllers: [system:serviceaccount:kubeflow:training-operator, "alice dev", system:serviceaccount:alice:gpuctl-tenant]
`))
	var got []string
	for _, d := range diags {
		got = append(got, d.Error())
	}
	want := []string{
		`.gpuctl.yaml:2:42: writableHostPathPrefixes[1]: "/cache" is not below any of hostPathPrefixes (/data, /output)`,
		`.gpuctl.yaml:2:50: writableHostPathPrefixes[2]: "output" must be a clean absolute directory other than /`,
		`.gpuctl.yaml:2:58: writableHostPathPrefixes[3]: "/" must be a clean absolute directory other than /`,
		`.gpuctl.yaml:4:23: tenancy.allowedNamespaces[0]: "team-[" is not a valid pattern`,
		`.gpuctl.yaml:5:22: tenancy.kinds[1]: ClusterRole.rbac.authorization.k8s.io is cluster-scoped; a tenant directory may hold namespaced kinds only`,
		`.gpuctl.yaml:5:61: tenancy.kinds[2]: "job" is not a kind: write Kind for the core group or Kind.group, e.g. Job.batch`,
		`.gpuctl.yaml:5:66: tenancy.kinds[3]: Namespace is cluster-scoped; a tenant directory may hold namespaced kinds only`,
		`.gpuctl.yaml:6:28: tenancy.highPriorityNamespaces[0]: "Alice" is not a valid namespace name: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
		`.gpuctl.yaml:7:67: tenancy.controllers[1]: "alice dev" is not a user name: letters, digits and :._@+- only, e.g. system:serviceaccount:kubeflow:training-operator`,
		`.gpuctl.yaml:7:80: tenancy.controllers[2]: system:serviceaccount:alice:gpuctl-tenant applies a tenant's files; it is no controller`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("diagnostics:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// TestTenancyConfigAllows: what the admin allows in .gpuctl.yaml renders: an added kind, a
// ServiceAccount the tenant declares, gpuctl-high where allowed, no writable prefixes.
func TestTenancyConfigAllows(t *testing.T) {
	cfg := tenantConfig + "writableHostPathPrefixes: []\ntenancy:\n  kinds: [ConfigMap, Role.rbac.authorization.k8s.io, Deployment.apps, ServiceAccount]\n" +
		"  highPriorityNamespaces: [alice]\n"
	high := strings.Replace(training, "name: sft", "name: sft\n  priority: high", 1)
	_, got := errorsOf(t, map[string]string{
		".gpuctl.yaml":          cfg,
		"teams/alice/role.yaml": "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: reader}\n",
		"teams/alice/sa.yaml":   "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: builder}\n",
		"teams/alice/web.yaml":  deployment("volumeMounts: [{name: o, mountPath: /o, readOnly: true}]", "serviceAccountName: builder\npriorityClassName: gpuctl-high\nvolumes: [{name: o, hostPath: {path: /output/alice}}]"),
		"teams/alice/job.yaml":  high,
		"teams/bob/job.yaml":    high,
	})
	want := `/repo/teams/bob/job.yaml:5:13: job.priority: pod policy priority-class: priority high (gpuctl-high) is not allowed in namespace "bob", tenancy.highPriorityNamespaces in .gpuctl.yaml lists the namespaces that may use it`
	if strings.Join(got, "\n") != want {
		t.Fatalf("errors:\n  %s\nwant\n  %s", strings.Join(got, "\n  "), want)
	}
}

// TestExamplesPassThePodPolicy: everything examples/ renders passes the pod policy of its
// namespace, and the workloads of teams/ carry their tenant.
func TestExamplesPassThePodPolicy(t *testing.T) {
	res, err := render.New(render.Options{}).Render(diskFS(), "../examples")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("../examples/.gpuctl.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, diags := render.ParseConfig("examples/.gpuctl.yaml", data)
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	checked := 0
	for _, o := range res.Objects {
		if _, ok := object.PodTemplatePath(o.GetKind()); ok {
			checked++
		}
		for _, v := range render.CheckPodPolicy(o, cfg.PodPolicy(o.GetNamespace())) {
			t.Errorf("%s: %s", object.RefOf(o).String(), v)
		}
		src := o.GetAnnotations()[keys.Source]
		if strings.HasPrefix(src, "teams/") && o.GetAnnotations()[keys.Tenant] != strings.Split(src, "/")[1] {
			t.Errorf("%s from %s: tenant %q", object.RefOf(o).String(), src, o.GetAnnotations()[keys.Tenant])
		}
	}
	if checked < 10 {
		t.Errorf("only %d pod templates checked", checked)
	}
}
