package render_test

import (
	"strings"
	"testing"
)

// Red-team attacks on tenancy: a team controls every byte below teams/alice/. Each attack is
// refused with its file, line, field and rule; the admin's directories stay trusted.

// redPod is a Pod of namespace alice whose spec holds spec (indented for the pod spec).
func redPod(spec string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: busybox}]\n" + indent(spec, 2)
}

// redVolume is a Pod with one volume v (its type and fields, indented below `- name: v`).
func redVolume(v string) string { return redPod("volumes:\n  - name: v\n" + indent(v, 4)) }

// redService is a Service with the given spec fields (flow style).
func redService(spec string) string {
	return "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {" + spec + "}\n"
}

func redTeamAttacks() map[string]tenancyCase {
	one := func(content string) map[string]string { return map[string]string{"teams/alice/evil.yaml": content} }
	return map[string]tenancyCase{
		// Parsing: what render checks is what the API server gets.
		"a duplicate key (the second would win in another parser)": {want: []string{"/repo/teams/alice/evil.yaml:7: invalid Kubernetes manifest: mapping key … already defined at line 6"}, files: one(redPod("hostPID: false\nhostPID: true"))},
		"a duplicate key in JSON":                                  {want: []string{"/repo/teams/alice/evil.yaml:1: invalid Kubernetes manifest: mapping key … already defined at line 1"}, files: one(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"hostPID":false,"hostPID":true,"containers":[{"name":"c","image":"b"}]}}`)},
		"a merge key hiding privileged":                            {want: []string{"/repo/teams/alice/evil.yaml:1:23: spec.containers[0].securityContext.privileged: pod policy privileged: privileged containers are not allowed in a tenant directory"}, admin: true, files: one("x: &priv {privileged: true}\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    image: b\n    securityContext:\n      <<: *priv\n")},
		"an anchor hiding hostNetwork":                             {want: []string{"/repo/teams/alice/evil.yaml:3:33: spec.hostNetwork: pod policy host-namespaces: the host's namespaces are not allowed in a tenant directory"}, admin: true, files: one("apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: {a: &t true}}\nspec:\n  hostNetwork: *t\n  containers: [{name: c, image: b}]\n")},
		"a JSON document":                                          {want: []string{"/repo/teams/alice/evil.yaml:1:75: spec.hostIPC: pod policy host-namespaces: the host's namespaces are not allowed in a tenant directory"}, admin: true, files: one(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"hostIPC":true,"containers":[{"name":"c","image":"b"}]}}`)},
		"hostPID: yes (a string)":                                  {want: []string{"/repo/teams/alice/evil.yaml:6:12: spec.hostPID: pod policy host-namespaces: the host's namespaces are not allowed in a tenant directory"}, admin: true, files: one(redPod("hostPID: yes"))},
		"kind: pod":                                                {want: []string{"/repo/teams/alice/evil.yaml:2:7: kind: tenancy kinds: pod is not a kind that a tenant directory (teams/alice/) may hold, an admin may allow a namespaced kind in tenancy.kinds of .gpuctl.yaml"}, admin: true, files: one("apiVersion: v1\nkind: pod\nmetadata: {name: p}\nspec: {hostPID: true}\n")},
		"kind: POD":                                                {want: []string{"/repo/teams/alice/evil.yaml:2:7: kind: tenancy kinds: POD is not a kind that a tenant directory (teams/alice/) may hold, an admin may allow a namespaced kind in tenancy.kinds of .gpuctl.yaml"}, admin: true, files: one("apiVersion: v1\nkind: POD\nmetadata: {name: p}\nspec: {hostPID: true}\n")},
		"a v1 List wrapping a Pod":                                 {want: []string{"/repo/teams/alice/evil.yaml:2:7: kind: tenancy kinds: List is not a kind that a tenant directory (teams/alice/) may hold, an admin may allow a namespaced kind in tenancy.kinds of .gpuctl.yaml"}, admin: true, files: one("apiVersion: v1\nkind: List\nmetadata: {name: l}\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: p}\n  spec: {hostPID: true, containers: [{name: c, image: b}]}\n")},
		"a PodList":                                                {want: []string{"/repo/teams/alice/evil.yaml:2:7: kind: tenancy kinds: PodList is not a kind that a tenant directory (teams/alice/) may hold, an admin may allow a namespaced kind in tenancy.kinds of .gpuctl.yaml"}, admin: true, files: one("apiVersion: v1\nkind: PodList\nmetadata: {name: l}\nitems: []\n")},
		"a PodTemplate":                                            {want: []string{"/repo/teams/alice/evil.yaml:2:7: kind: tenancy kinds: PodTemplate is not a kind that a tenant directory (teams/alice/) may hold, an admin may allow a namespaced kind in tenancy.kinds of .gpuctl.yaml"}, admin: true, files: one("apiVersion: v1\nkind: PodTemplate\nmetadata: {name: t}\ntemplate: {spec: {hostPID: true}}\n")},
		"a Deployment of apps/v1beta1":                             {want: []string{"/repo/teams/alice/evil.yaml:4:35: spec.template.spec.hostPID: pod policy host-namespaces: the host's namespaces are not allowed in a tenant directory"}, admin: true, files: one("apiVersion: apps/v1beta1\nkind: Deployment\nmetadata: {name: d}\nspec: {template: {spec: {hostPID: true}}}\n")},

		// Containers beyond containers[].
		"a privileged init container":           {want: []string{"/repo/teams/alice/evil.yaml:6:70: spec.initContainers[0].securityContext.privileged: pod policy privileged: privileged containers are not allowed in a tenant directory"}, admin: true, files: one(redPod("initContainers: [{name: i, image: b, securityContext: {privileged: true}}]"))},
		"a privileged ephemeral container":      {want: []string{"/repo/teams/alice/evil.yaml:6:75: spec.ephemeralContainers[0].securityContext.privileged: pod policy privileged: privileged containers are not allowed in a tenant directory"}, admin: true, files: one(redPod("ephemeralContainers: [{name: i, image: b, securityContext: {privileged: true}}]"))},
		"a CronJob's privileged init container": {want: []string{"/repo/teams/alice/evil.yaml:12:78: spec.jobTemplate.spec.template.spec.initContainers[0].securityContext.privileged: pod policy privileged: privileged containers are not allowed in a tenant directory"}, admin: true, files: one("apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: c}\nspec:\n  schedule: '@daily'\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          restartPolicy: Never\n          containers: [{name: c, image: b}]\n          initContainers: [{name: i, image: b, securityContext: {privileged: true}}]\n")},

		// Host paths.
		"hostPath //etc":          {want: []string{"/repo/teams/alice/evil.yaml:8:24: spec.volumes[0].hostPath.path: pod policy host-path: host path \"//etc\" is outside the allowed prefixes (/datasets, /models, /output, /cache, /data)"}, admin: true, files: one(redVolume("hostPath: {path: //etc}"))},
		"hostPath /data/../etc":   {want: []string{"/repo/teams/alice/evil.yaml:8:24: spec.volumes[0].hostPath.path: pod policy host-path: host path \"/data/../etc\" may not have a .. segment"}, admin: true, files: one(redVolume("hostPath: {path: /data/../etc}"))},
		"hostPath /data/./..":     {want: []string{"/repo/teams/alice/evil.yaml:8:24: spec.volumes[0].hostPath.path: pod policy host-path: host path \"/data/./..\" may not have a .. segment"}, admin: true, files: one(redVolume("hostPath: {path: /data/./..}"))},
		"hostPath /etc/":          {want: []string{"/repo/teams/alice/evil.yaml:8:24: spec.volumes[0].hostPath.path: pod policy host-path: host path \"/etc/\" is outside the allowed prefixes (/datasets, /models, /output, /cache, /data)"}, admin: true, files: one(redVolume("hostPath: {path: /etc/}"))},
		"hostPath /datasets-evil": {want: []string{"/repo/teams/alice/evil.yaml:8:24: spec.volumes[0].hostPath.path: pod policy host-path: host path \"/datasets-evil\" is outside the allowed prefixes (/datasets, /models, /output, /cache, /data)"}, admin: true, files: one(redVolume("hostPath: {path: /datasets-evil}"))},
		"hostPath of a lookalike": {want: []string{"/repo/teams/alice/evil.yaml:8:24: spec.volumes[0].hostPath.path: pod policy host-path: host path \"/ｄata\" is outside the allowed prefixes (/datasets, /models, /output, /cache, /data)"}, admin: true, files: one(redVolume("hostPath: {path: \"/\uff44ata\"}"))},
		"hostPath relative":       {want: []string{"/repo/teams/alice/evil.yaml:8:24: spec.volumes[0].hostPath.path: pod policy host-path: host path \"data\" must be absolute"}, admin: true, files: one(redVolume("hostPath: {path: data}"))},
		"hostPath empty":          {want: []string{"/repo/teams/alice/evil.yaml:8:24: spec.volumes[0].hostPath.path: pod policy host-path: host path \"\" must be absolute"}, admin: true, files: one(redVolume("hostPath: {path: ''}"))},

		// Volume types that mount or run what the tenant names on the node.
		"an NFS export":               {want: []string{"/repo/teams/alice/evil.yaml:8:12: spec.volumes[0].nfs: pod policy volume-types: nfs volumes mount or run what the tenant names on the node; allowed: configMap, csi, downwardAPI, emptyDir, ephemeral, hostPath, image, persistentVolumeClaim, projected, secret"}, admin: true, files: one(redVolume("nfs: {server: 10.0.0.2, path: /export}"))},
		"an iSCSI target":             {want: []string{"/repo/teams/alice/evil.yaml:8:14: spec.volumes[0].iscsi: pod policy volume-types: iscsi volumes mount or run what the tenant names on the node; allowed: configMap, csi, downwardAPI, emptyDir, ephemeral, hostPath, image, persistentVolumeClaim, projected, secret"}, admin: true, files: one(redVolume("iscsi: {targetPortal: '10.0.0.1:3260', iqn: iqn.x, lun: 0}"))},
		"a CephFS share":              {want: []string{"/repo/teams/alice/evil.yaml:8:15: spec.volumes[0].cephfs: pod policy volume-types: cephfs volumes mount or run what the tenant names on the node; allowed: configMap, csi, downwardAPI, emptyDir, ephemeral, hostPath, image, persistentVolumeClaim, projected, secret"}, admin: true, files: one(redVolume("cephfs: {monitors: [10.0.0.3]}"))},
		"an RBD image":                {want: []string{"/repo/teams/alice/evil.yaml:8:12: spec.volumes[0].rbd: pod policy volume-types: rbd volumes mount or run what the tenant names on the node; allowed: configMap, csi, downwardAPI, emptyDir, ephemeral, hostPath, image, persistentVolumeClaim, projected, secret"}, admin: true, files: one(redVolume("rbd: {monitors: [a], image: b}"))},
		"a gitRepo (git on the node)": {want: []string{"/repo/teams/alice/evil.yaml:8:16: spec.volumes[0].gitRepo: pod policy volume-types: gitRepo volumes mount or run what the tenant names on the node; allowed: configMap, csi, downwardAPI, emptyDir, ephemeral, hostPath, image, persistentVolumeClaim, projected, secret"}, admin: true, files: one(redVolume("gitRepo: {repository: 'https://git.example/x.git'}"))},
		"a flexVolume driver":         {want: []string{"/repo/teams/alice/evil.yaml:8:19: spec.volumes[0].flexVolume: pod policy volume-types: flexVolume volumes mount or run what the tenant names on the node; allowed: configMap, csi, downwardAPI, emptyDir, ephemeral, hostPath, image, persistentVolumeClaim, projected, secret"}, admin: true, files: one(redVolume("flexVolume: {driver: x/y}"))},
		"another team's GCE disk":     {want: []string{"/repo/teams/alice/evil.yaml:8:26: spec.volumes[0].gcePersistentDisk: pod policy volume-types: gcePersistentDisk volumes mount or run what the tenant names on the node; allowed: configMap, csi, downwardAPI, emptyDir, ephemeral, hostPath, image, persistentVolumeClaim, projected, secret"}, admin: true, files: one(redVolume("gcePersistentDisk: {pdName: bob-disk}"))},
		"another team's EBS volume":   {want: []string{"/repo/teams/alice/evil.yaml:8:29: spec.volumes[0].awsElasticBlockStore: pod policy volume-types: awsElasticBlockStore volumes mount or run what the tenant names on the node; allowed: configMap, csi, downwardAPI, emptyDir, ephemeral, hostPath, image, persistentVolumeClaim, projected, secret"}, admin: true, files: one(redVolume("awsElasticBlockStore: {volumeID: vol-1}"))},
		"a local volume":              {want: []string{"/repo/teams/alice/evil.yaml:8:14: spec.volumes[0].local: pod policy volume-types: local volumes mount or run what the tenant names on the node; allowed: configMap, csi, downwardAPI, emptyDir, ephemeral, hostPath, image, persistentVolumeClaim, projected, secret"}, admin: true, files: one(redVolume("local: {path: /}"))},

		// GPUs outside the device plugin and quota.
		"NVIDIA_VISIBLE_DEVICES=all": {want: []string{"/repo/teams/alice/evil.yaml:6:53: spec.initContainers[0].env[0].name: pod policy gpu-devices: NVIDIA_VISIBLE_DEVICES would give the container GPUs without a nvidia.com/gpu request; request GPUs as resources"}, admin: true, files: one(redPod("initContainers: [{name: i, image: b, env: [{name: NVIDIA_VISIBLE_DEVICES, value: all}]}]"))},

		// Services and ingresses that reach elsewhere.
		"an ExternalName to the metadata endpoint": {want: []string{"/repo/teams/alice/evil.yaml:4:14: spec.type: pod policy external-name: a Service may only be of type ClusterIP, NodePort or LoadBalancer: an ExternalName makes proxies connect to any host"}, admin: true, files: one(redService("type: ExternalName, externalName: 169.254.169.254"))},
		"an ExternalName to the API server":        {want: []string{"/repo/teams/alice/evil.yaml:4:14: spec.type: pod policy external-name: a Service may only be of type ClusterIP, NodePort or LoadBalancer: an ExternalName makes proxies connect to any host"}, admin: true, files: one(redService("type: ExternalName, externalName: kubernetes.default.svc.cluster.local"))},
		"Endpoints to the metadata endpoint":       {want: []string{"/repo/teams/alice/evil.yaml:2:7: kind: tenancy kinds: Endpoints is not a kind that a tenant directory (teams/alice/) may hold, an admin may allow a namespaced kind in tenancy.kinds of .gpuctl.yaml"}, admin: true, files: one("apiVersion: v1\nkind: Endpoints\nmetadata: {name: s}\nsubsets: [{addresses: [{ip: 169.254.169.254}]}]\n")},
		"an EndpointSlice to the API server":       {want: []string{"/repo/teams/alice/evil.yaml:2:7: kind: tenancy kinds: EndpointSlice.discovery.k8s.io is not a kind that a tenant directory (teams/alice/) may hold, an admin may allow a namespaced kind in tenancy.kinds of .gpuctl.yaml"}, admin: true, files: one("apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: s}\naddressType: IPv4\nendpoints: [{addresses: [10.96.0.1]}]\n")},
		"an nginx configuration snippet": {want: []string{"/repo/teams/alice/evil.yaml:6:49: metadata.annotations[nginx.ingress.kubernetes.io/server-snippet]: pod policy ingress-snippets: ingress controllers paste a snippet into their own configuration; it is not allowed in a tenant directory", "/repo/teams/alice/evil.yaml:7:34: metadata.annotations[nginx.org/location-snippets]: pod policy ingress-snippets: ingress controllers paste a snippet into their own configuration; it is not allowed in a tenant directory"}, admin: true, files: one("apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: i\n  annotations:\n" +
			"    nginx.ingress.kubernetes.io/server-snippet: 'location /x { alias /etc/; }'\n    nginx.org/location-snippets: 'return 200;'\n" +
			"spec: {defaultBackend: {service: {name: s, port: {number: 80}}}}\n")},

		// Identities and credentials.
		"a token Secret of a platform ServiceAccount": {want: []string{"/repo/teams/alice/evil.yaml:6:53: metadata.annotations[kubernetes.io/service-account.name]: pod policy service-account: a token Secret of ServiceAccount \"platform-deployer\", which the tenant's directories do not declare: only their own ServiceAccounts and default"}, admin: true, files: one("apiVersion: v1\nkind: Secret\ntype: kubernetes.io/service-account-token\n" +
			"metadata:\n  name: t\n  annotations: {kubernetes.io/service-account.name: platform-deployer}\n")},
		"the deprecated serviceAccount field": {want: []string{"/repo/teams/alice/evil.yaml:6:19: spec.serviceAccount: pod policy service-account: gpuctl-tenant is the identity that applies the namespace; pods may not run as it"}, admin: true, files: one(redPod("serviceAccount: gpuctl-tenant"))},
		"a DRA ResourceClaim":                 {want: []string{"/repo/teams/alice/evil.yaml:2:7: kind: tenancy kinds: ResourceClaim.resource.k8s.io is not a kind that a tenant directory (teams/alice/) may hold, an admin may allow a namespaced kind in tenancy.kinds of .gpuctl.yaml"}, admin: true, files: one("apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: all-gpus}\n")},

		// The admin's files, written by the team.
		"a .gpuctl.yaml in the team directory":       {want: []string{"/repo/teams/alice/.gpuctl.yaml: tenancy admin-file: .gpuctl.yaml is the admin's file and a tenant directory (teams/alice/) may not hold one; it is not read"}, files: map[string]string{"teams/alice/.gpuctl.yaml": "namespaces: []\n", "teams/alice/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"}},
		"a gpuctl-policy.yaml in the team directory": {want: []string{"/repo/teams/alice/sub/gpuctl-policy.yaml: tenancy admin-file: gpuctl-policy.yaml is the admin's file and a tenant directory (teams/alice/sub/) may not hold one; it is not read"}, files: map[string]string{"teams/alice/sub/gpuctl-policy.yaml": "rules: {}\n"}},

		// Kustomize.
		"a kustomized List wrapping a Pod": {want: []string{"/repo/teams/alice/kustomization.yaml: spec.hostPID: kustomize output Pod alice/p: pod policy host-namespaces: the host's namespaces are not allowed in a tenant directory"}, files: map[string]string{"teams/alice/kustomization.yaml": "resources: [l.yaml]\n",
			"teams/alice/l.yaml": "apiVersion: v1\nkind: List\nmetadata: {name: l}\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: p}\n  spec: {hostPID: true, containers: [{name: c, image: b}]}\n"}},
		"a kustomized hidden file":        {want: []string{"/repo/teams/alice/kustomization.yaml: spec.hostPID: kustomize output Pod alice/p: pod policy host-namespaces: the host's namespaces are not allowed in a tenant directory"}, files: map[string]string{"teams/alice/kustomization.yaml": "resources: [.h/p.yaml]\n", "teams/alice/.h/p.yaml": redPod("hostPID: true")}},
		"a kustomized JSON file":          {want: []string{"/repo/teams/alice/kustomization.yaml: spec.hostIPC: kustomize output Pod alice/p: pod policy host-namespaces: the host's namespaces are not allowed in a tenant directory"}, files: map[string]string{"teams/alice/kustomization.yaml": "resources: [p.json]\n", "teams/alice/p.json": `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"hostIPC":true,"containers":[{"name":"c","image":"b"}]}}`}},
		"kustomize namespace: bob":        {want: []string{"/repo/teams/alice/kustomization.yaml: kustomize output ConfigMap bob/c is outside the directory's namespace \"alice\""}, files: map[string]string{"teams/alice/kustomization.yaml": "namespace: bob\nresources: [c.yaml]\n", "teams/alice/c.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"}},
		"a patch moving an object to bob": {want: []string{"/repo/teams/alice/kustomization.yaml: kustomize output ConfigMap bob/c is outside the directory's namespace \"alice\""}, files: map[string]string{"teams/alice/kustomization.yaml": "resources: [c.yaml]\npatches:\n- target: {kind: ConfigMap}\n  patch: |-\n    - {op: add, path: /metadata/namespace, value: bob}\n", "teams/alice/c.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"}},
		"a kustomized ExternalName":       {want: []string{"/repo/teams/alice/kustomization.yaml: spec.type: kustomize output Service alice/s: pod policy external-name: a Service may only be of type ClusterIP, NodePort or LoadBalancer: an ExternalName makes proxies connect to any host"}, files: map[string]string{"teams/alice/kustomization.yaml": "resources: [s.yaml]\npatches:\n- target: {kind: Service}\n  patch: |-\n    - {op: add, path: /spec/type, value: ExternalName}\n", "teams/alice/s.yaml": redService("ports: [{port: 80}]")}},
		"a Service type written in lower case": {admin: true, files: one(redService("type: externalname, externalName: metadata.google.internal")),
			want: []string{"/repo/teams/alice/evil.yaml:4:14: spec.type: pod policy external-name: a Service may only be of type ClusterIP, NodePort or LoadBalancer: an ExternalName makes proxies connect to any host"}},
		"a reference that climbs back into bob's directory": {files: map[string]string{"teams/alice/kustomization.yaml": "resources: [../../teams/alice/../bob]\n",
			"teams/bob/kustomization.yaml": "resources: [c.yaml]\n", "teams/bob/c.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"},
			want: []string{`/repo/teams/alice/kustomization.yaml:1:13: resources[0]: the path leaves the team directory teams/alice/ (namespace "alice"): a team's kustomization refers only to its own files, copy the files into teams/alice/, or move the kustomization out of the team directories`}},
		"a second kustomization file with a remote base": {want: []string{"/repo/teams/alice/kustomization.yaml: kustomize build: Found multiple kustomization files under: /repo/teams/alice"}, files: map[string]string{"teams/alice/kustomization.yaml": "resources: [c.yaml]\n",
			"teams/alice/Kustomization": "resources: ['https://example.com/x']\n", "teams/alice/c.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"}},
		"an inline generator reading bob's file": {want: []string{"/repo/teams/alice/kustomization.yaml:2:3: generators[0].files: the path leaves the team directory teams/alice/ (namespace \"alice\"): a team's kustomization refers only to its own files, copy the files into teams/alice/, or move the kustomization out of the team directories"}, files: map[string]string{"teams/alice/kustomization.yaml": "generators:\n- |\n  apiVersion: builtin\n  kind: ConfigMapGenerator\n  metadata: {name: x}\n  files: [../bob/secret.txt]\n",
			"teams/bob/secret.txt": "s3cr3t"}},
		"a generator file reading the metadata endpoint": {want: []string{"/repo/teams/alice/kustomization.yaml:1:14: generators[0].envs: an absolute path is refused: kustomize references are relative to the kustomization's directory"}, files: map[string]string{"teams/alice/kustomization.yaml": "generators: [gen.yaml]\n",
			"teams/alice/gen.yaml": "apiVersion: builtin\nkind: SecretGenerator\nmetadata: {name: x}\nenvs: [/proc/self/environ]\n"}},
		"a patch transformer reading outside": {want: []string{"/repo/teams/alice/kustomization.yaml:3:3: transformers[0].path: the path leaves the team directory teams/alice/ (namespace \"alice\"): a team's kustomization refers only to its own files, copy the files into teams/alice/, or move the kustomization out of the team directories"}, files: map[string]string{"teams/alice/kustomization.yaml": "resources: [c.yaml]\ntransformers:\n- |\n  apiVersion: builtin\n  kind: PatchTransformer\n  metadata: {name: p}\n  path: ../../platform/patch.yaml\n",
			"teams/alice/c.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n", "platform/patch.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"}},
	}
}

// TestRedTeamAttacks: each attack is refused with exactly the expected errors, and the tree
// renders no object.
func TestRedTeamAttacks(t *testing.T) {
	for name, tc := range redTeamAttacks() {
		t.Run(name, func(t *testing.T) {
			res, got := errorsOf(t, tc.files)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("errors:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
			}
			if len(tc.want) == 0 || len(res.Objects) != 0 {
				t.Errorf("a refused tree rendered %d objects (errors: %d)", len(res.Objects), len(got))
			}
		})
	}
}

// TestRedTeamTenantMarksOverwritten: what a team writes of gpuctl's own marks (the tenant,
// the source, the managed-by label) is overwritten, in plain manifests and kustomize output;
// a Service of an unset or empty type passes.
func TestRedTeamTenantMarksOverwritten(t *testing.T) {
	marks := "  annotations: {g8s.host/tenant: bob, g8s.host/source: .gpuctl.yaml}\n  labels: {g8s.host/managed-by: someone-else}\n"
	res, got := errorsOf(t, map[string]string{
		"teams/alice/cm.yaml":              "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\n" + marks,
		"teams/alice/svc.yaml":             redService("type: '', ports: [{port: 80}]"),
		"teams/alice/k/kustomization.yaml": "resources: [cm.yaml]\ncommonAnnotations: {g8s.host/tenant: bob}\n",
		"teams/alice/k/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: built\n" + marks,
	})
	if len(got) != 0 {
		t.Fatalf("errors: %q", got)
	}
	for _, o := range res.Objects {
		if o.GetNamespace() != "alice" || o.GetName() == "gpuctl-tenant" {
			continue
		}
		if ann := o.GetAnnotations(); ann["g8s.host/tenant"] != "alice" || o.GetLabels()["g8s.host/managed-by"] != "gpuctl" {
			t.Errorf("%s: tenant %q, managed-by %q", o.GetName(), ann["g8s.host/tenant"], o.GetLabels()["g8s.host/managed-by"])
		}
		if o.GetName() == "plain" && o.GetAnnotations()["g8s.host/source"] != "teams/alice/cm.yaml" {
			t.Errorf("plain: source %q", o.GetAnnotations()["g8s.host/source"])
		}
	}
}
