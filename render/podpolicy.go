package render

import (
	"fmt"
	"path"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The tenant pod policy: one policy for every pod that a tenant directory produces. Render
// checks it here, in Go, on every object of a tenant directory; the admission policy checks
// the same rules in CEL on every pod-creating request in a tenant namespace. Rule names
// appear in messages as "pod policy <rule>: ...".
const (
	// RuleHostNamespaces: hostNetwork, hostPID and hostIPC unset or false.
	RuleHostNamespaces = "host-namespaces"
	// RulePrivileged: securityContext.privileged unset or false.
	RulePrivileged = "privileged"
	// RuleCapabilities: capabilities.add only from AllowedCapabilities.
	RuleCapabilities = "capabilities"
	// RuleHostPath: hostPath volumes only at or below the host-path prefixes, of a known type,
	// mounted read-only unless at or below a writable prefix.
	RuleHostPath = "host-path"
	// RuleHostPorts: ports[].hostPort unset or 0.
	RuleHostPorts = "host-ports"
	// RuleHostProbes: probes and lifecycle handlers never name a host (httpGet.host,
	// tcpSocket.host unset or ""): the kubelet would connect to it from the node (Pod
	// Security baseline since Kubernetes 1.34).
	RuleHostProbes = "host-probes"
	// RuleAppArmor: AppArmor profiles only runtime/default or localhost ones.
	RuleAppArmor = "apparmor"
	// RuleSELinux: seLinuxOptions.type only from AllowedSELinuxTypes; user and role unset.
	RuleSELinux = "selinux"
	// RuleProcMount: securityContext.procMount unset or Default.
	RuleProcMount = "proc-mount"
	// RuleSeccomp: seccompProfile.type never Unconfined.
	RuleSeccomp = "seccomp"
	// RuleSysctls: only the sysctls of AllowedSysctls.
	RuleSysctls = "sysctls"
	// RuleHostProcess: windowsOptions.hostProcess never true.
	RuleHostProcess = "host-process"
	// RuleNodeName: spec.nodeName unset; pools place pods.
	RuleNodeName = "node-name"
	// RuleTolerations: only tolerations of gpuctl's taints (nvidia.com/gpu, g8s.host/*) and
	// of the two NoExecute taints the API server adds itself.
	RuleTolerations = "tolerations"
	// RulePriorityClass: priorityClassName unset or one of gpuctl's classes; gpuctl-high only
	// where PodPolicy.AllowHighPriority.
	RulePriorityClass = "priority-class"
	// RuleServiceAccount: never the tenant's own applying identity; in render, only
	// ServiceAccounts the tenant declares.
	RuleServiceAccount = "service-account"
	// RuleExternalIPs: a Service's spec.externalIPs empty.
	RuleExternalIPs = "external-ips"
	// RuleVolumeName: a PersistentVolumeClaim never binds a named PersistentVolume.
	RuleVolumeName = "volume-name"
	// RuleVolumeTypes: pod volumes only of AllowedVolumeTypes. The others make the node mount
	// what the tenant names (an NFS export, an iSCSI target, a cloud disk by its ID, another
	// team's Ceph share) or run a program there (gitRepo clones on the node, flexVolume runs a
	// driver binary), beside the host-path prefixes.
	RuleVolumeTypes = "volume-types"
	// RuleExternalName: a Service is never of type ExternalName, which makes every proxy that
	// follows it (an ingress controller, a service mesh) connect to a host the tenant names,
	// such as a cloud metadata endpoint or the API server.
	RuleExternalName = "external-name"
	// RuleGPUDevices: no container sets NVIDIA_VISIBLE_DEVICES: the NVIDIA container runtime
	// would hand it the node's GPUs without a nvidia.com/gpu request, outside quota and the
	// device plugin.
	RuleGPUDevices = "gpu-devices"
	// RuleIngressSnippets: an Ingress carries no configuration-snippet annotation (any key
	// ending in -snippet or -snippets): ingress controllers paste it into their own
	// configuration, which can read every Secret the controller can (CVE-2021-25742).
	RuleIngressSnippets = "ingress-snippets"
	// RuleOwnerReferences: metadata.ownerReferences unset (the object's, a pod template's, a
	// CronJob's job template's): Kueue's webhooks skip a pod or Job whose controller owner is a
	// kind Kueue integrates (a Deployment, a Job, whatever its UID), and the garbage collector
	// never deletes an object with an owner it cannot resolve, so a forged owner runs GPUs
	// outside the team's queue. Admission lets controllers set them (AdmissionPolicy).
	RuleOwnerReferences = "owner-references"
	// RuleSchedulingGates: a pod spec sets no schedulingGates: Kueue gates the pods it queues
	// and removes its gate when it admits them; admission lets only controllers remove a gate.
	RuleSchedulingGates = "scheduling-gates"
	// RuleManagedBy: a Job's spec.managedBy unset (or Kubernetes' own Job controller): another
	// manager takes the Job away from the Job controller and from Kueue's queue.
	RuleManagedBy = "managed-by"
)

// JobControllerName is the value of a Job's spec.managedBy that names Kubernetes' own Job
// controller, the default (RuleManagedBy).
const JobControllerName = "kubernetes.io/job-controller"

// NvidiaVisibleDevices is the environment variable of the NVIDIA container runtime that
// selects the GPUs of a container (RuleGPUDevices).
const NvidiaVisibleDevices = "NVIDIA_VISIBLE_DEVICES"

// AppArmorAnnotationPrefix starts the pod annotations that set a container's AppArmor profile.
const AppArmorAnnotationPrefix = "container.apparmor.security.beta.kubernetes.io/"

// AllowedCapabilities are the capabilities a tenant's container may add (Pod Security baseline).
func AllowedCapabilities() []string {
	return []string{"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
		"NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}
}

// AllowedSysctls are the sysctls a tenant's pod may set (Pod Security baseline).
func AllowedSysctls() []string {
	return []string{"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range",
		"net.ipv4.ip_unprivileged_port_start", "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range",
		"net.ipv4.ip_local_reserved_ports", "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout",
		"net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes"}
}

// AllowedSELinuxTypes are the SELinux types a tenant's pod may ask for (Pod Security baseline).
func AllowedSELinuxTypes() []string {
	return []string{"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}
}

// AllowedVolumeTypes are the pod volume types a tenant's pod may use (Pod Security
// restricted's list, plus hostPath under the host-path rule): all that reach the node are
// the admin's (PersistentVolumes, CSI drivers).
func AllowedVolumeTypes() []string {
	return []string{"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "hostPath", "image",
		"persistentVolumeClaim", "projected", "secret"}
}

// RefusedVolumeTypes are the volume types of the Kubernetes API that AllowedVolumeTypes
// leaves out (nfs, iscsi, gitRepo, gcePersistentDisk, ...): the admission policy refuses
// these by name, render every key but the allowed ones.
func RefusedVolumeTypes() []string {
	var out []string
	t := reflect.TypeOf(corev1.VolumeSource{})
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && !slices.Contains(AllowedVolumeTypes(), name) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// AllowedHostPathTypes are the hostPath volume types a tenant's pod may use.
func AllowedHostPathTypes() []string {
	return []string{"", string(corev1.HostPathDirectory), string(corev1.HostPathDirectoryOrCreate),
		string(corev1.HostPathFile), string(corev1.HostPathFileOrCreate)}
}

// PodPolicy is the tenant pod policy of one tenant namespace; (*Config).PodPolicy builds it.
type PodPolicy struct {
	// Namespace is the tenant namespace.
	Namespace string
	// HostPathPrefixes are the host directories that hostPath volumes may mount.
	HostPathPrefixes []string
	// WritableHostPathPrefixes are those below which a hostPath may be mounted read-write.
	WritableHostPathPrefixes []string
	// AllowHighPriority lets pods use the PriorityClass gpuctl-high.
	AllowHighPriority bool
	// ServiceAccounts, when not nil, are the ServiceAccounts the tenant declares: a pod may
	// run only as one of them or as "default". When nil, any name but the tenant's applying
	// identity (keys.TenantServiceAccount) is accepted.
	ServiceAccounts map[string]bool
}

// Violation is one breach of the pod policy.
type Violation struct {
	// Rule is the rule broken, e.g. RuleHostNamespaces.
	Rule string
	// Field is the path of the offending field in the object, e.g.
	// spec.template.spec.hostNetwork; a map key holding dots is written in brackets:
	// metadata.annotations[container.apparmor.security.beta.kubernetes.io/main].
	Field string
	// Message says what is wrong, without the rule or the field.
	Message string
}

// String formats the violation as field: pod policy rule: message.
func (v Violation) String() string {
	return v.Field + ": pod policy " + v.Rule + ": " + v.Message
}

// CheckPodPolicy checks one object against the pod policy: the pod spec of a pod-creating
// kind, a Service's externalIPs, a PersistentVolumeClaim's volumeName (also in StatefulSet
// claim templates). A value of an unexpected type counts as set: render never accepts what
// it cannot read, and the API server would refuse it anyway. Violations come in field order.
func CheckPodPolicy(obj *unstructured.Unstructured, p PodPolicy) []Violation {
	c := &policyCheck{p: p}
	m := obj.Object
	switch obj.GetKind() {
	case "Service":
		if v, ok := mapAt(m["spec"])["externalIPs"]; ok && (v != nil && !isEmptyList(v)) {
			c.add(RuleExternalIPs, "spec.externalIPs", "a Service may not claim external IPs: it would take traffic for any address")
		}
		if t := mapAt(m["spec"])["type"]; !stringIn(t, []string{"", string(corev1.ServiceTypeClusterIP),
			string(corev1.ServiceTypeNodePort), string(corev1.ServiceTypeLoadBalancer)}) {
			c.add(RuleExternalName, "spec.type", "a Service may only be of type ClusterIP, NodePort or LoadBalancer: an ExternalName makes proxies connect to any host")
		}
	case "Ingress":
		c.snippets(mapAt(mapAt(m["metadata"])["annotations"]), "metadata.annotations")
	case "Secret":
		c.tokenSecret(m)
	case "PersistentVolumeClaim":
		c.volumeName(m, "")
	case "StatefulSet":
		for i, t := range listAt(mapAt(m["spec"])["volumeClaimTemplates"]) {
			c.volumeName(mapAt(t), fmt.Sprintf("spec.volumeClaimTemplates[%d]", i))
		}
	}
	c.ownerReferences(obj)
	c.managedBy(obj)
	tp, ok := object.PodTemplatePath(obj.GetKind())
	if !ok {
		return c.out
	}
	tmpl := m
	for _, k := range tp {
		tmpl = mapAt(tmpl[k])
	}
	base := strings.Join(tp, ".")
	c.podAnnotations(mapAt(mapAt(tmpl["metadata"])["annotations"]), join(base, "metadata.annotations"))
	if spec := mapAt(tmpl["spec"]); spec != nil {
		c.podSpec(spec, join(base, "spec"))
	}
	return c.out
}

// ownerReferences refuses metadata.ownerReferences on the object and on the templates it
// carries (RuleOwnerReferences).
func (c *policyCheck) ownerReferences(obj *unstructured.Unstructured) {
	for _, base := range kueueMetadataPaths(obj.GetKind()) {
		meta := obj.Object
		for _, k := range strings.Split(base, ".") {
			meta = mapAt(meta[k])
		}
		if v, ok := meta["ownerReferences"]; ok && v != nil && !isEmptyList(v) {
			c.add(RuleOwnerReferences, base+".ownerReferences", "owner references are set by controllers, never in a tenant directory: "+
				"Kueue does not queue a pod or Job whose owner is a kind it integrates, and the garbage collector keeps one whose owner it cannot find")
		}
	}
}

// managedBy refuses a Job's (or a CronJob's job template's) spec.managedBy other than
// Kubernetes' Job controller (RuleManagedBy).
func (c *policyCheck) managedBy(obj *unstructured.Unstructured) {
	if obj.GroupVersionKind().Group != "batch" {
		return
	}
	var specPath []string
	switch obj.GetKind() {
	case "Job":
		specPath = []string{"spec"}
	case "CronJob":
		specPath = []string{"spec", "jobTemplate", "spec"}
	default:
		return
	}
	spec := obj.Object
	for _, k := range specPath {
		spec = mapAt(spec[k])
	}
	if v := spec["managedBy"]; v != nil && v != JobControllerName {
		c.add(RuleManagedBy, strings.Join(specPath, ".")+".managedBy", "a Job is run by Kubernetes' Job controller (%s) and admitted by Kueue; another manager would take it out of the team's queue", JobControllerName)
	}
}

// policyCheck collects the violations of one object.
type policyCheck struct {
	p   PodPolicy
	out []Violation
}

func (c *policyCheck) add(rule, field, format string, args ...any) {
	c.out = append(c.out, Violation{Rule: rule, Field: field, Message: fmt.Sprintf(format, args...)})
}

func mapAt(v any) map[string]any { m, _ := v.(map[string]any); return m }

func listAt(v any) []any { l, _ := v.([]any); return l }

func isEmptyList(v any) bool { l, ok := v.([]any); return ok && len(l) == 0 }

// isSet reports whether a value is written and not the zero value of its field (false, 0,
// ""); a value of another type counts as set.
func isSet(v any) bool {
	switch t := v.(type) {
	case nil:
		return false
	case bool:
		return t
	case string:
		return t != ""
	case int64:
		return t != 0
	case float64:
		return t != 0
	case int:
		return t != 0
	}
	return true
}

// stringIn reports whether v is absent (nil) or a string from allowed.
func stringIn(v any, allowed []string) bool {
	if v == nil {
		return true
	}
	s, ok := v.(string)
	return ok && slices.Contains(allowed, s)
}

func (c *policyCheck) volumeName(pvc map[string]any, base string) {
	if isSet(mapAt(pvc["spec"])["volumeName"]) {
		c.add(RuleVolumeName, join(base, "spec.volumeName"), "a claim may not bind a PersistentVolume by name: it could take another tenant's volume")
	}
}

// snippets refuses the configuration-snippet annotations of an Ingress.
func (c *policyCheck) snippets(ann map[string]any, base string) {
	for _, k := range sortedKeys(ann) {
		if IsSnippetAnnotation(k) {
			c.add(RuleIngressSnippets, base+"["+k+"]", "ingress controllers paste a snippet into their own configuration; it is not allowed in a tenant directory")
		}
	}
}

// IsSnippetAnnotation reports whether an annotation key is an ingress controller's
// configuration snippet (RuleIngressSnippets): its name ends in -snippet or -snippets, as
// nginx.ingress.kubernetes.io/configuration-snippet and nginx.org/server-snippets do.
func IsSnippetAnnotation(key string) bool {
	return strings.HasSuffix(key, "-snippet") || strings.HasSuffix(key, "-snippets")
}

// tokenSecret holds a ServiceAccount token Secret to the service-account rule: the token
// controller would fill it with a token of the named ServiceAccount, which must be one a pod
// of the tenant may run as.
func (c *policyCheck) tokenSecret(m map[string]any) {
	if m["type"] != string(corev1.SecretTypeServiceAccountToken) {
		return
	}
	field := "metadata.annotations[" + corev1.ServiceAccountNameKey + "]"
	switch s, _ := mapAt(mapAt(m["metadata"])["annotations"])[corev1.ServiceAccountNameKey].(string); {
	case s == keys.TenantServiceAccount:
		c.add(RuleServiceAccount, field, "a token Secret of %s would hand the namespace's applying identity to its pods", keys.TenantServiceAccount)
	case s == "default" || c.p.ServiceAccounts == nil || c.p.ServiceAccounts[s]:
	default:
		c.add(RuleServiceAccount, field, "a token Secret of ServiceAccount %q, which the tenant's directories do not declare: only their own ServiceAccounts and default", s)
	}
}

func sortedKeys(m map[string]any) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

func (c *policyCheck) podAnnotations(ann map[string]any, base string) {
	for _, k := range sortedKeys(ann) {
		if !strings.HasPrefix(k, AppArmorAnnotationPrefix) {
			continue
		}
		if s, ok := ann[k].(string); !ok || (s != "runtime/default" && !strings.HasPrefix(s, "localhost/")) {
			c.add(RuleAppArmor, base+"["+k+"]", "only the AppArmor profiles runtime/default and localhost/* are allowed")
		}
	}
}

func (c *policyCheck) podSpec(spec map[string]any, base string) {
	for _, f := range []string{"hostNetwork", "hostPID", "hostIPC"} {
		if isSet(spec[f]) {
			c.add(RuleHostNamespaces, base+"."+f, "the host's namespaces are not allowed in a tenant directory")
		}
	}
	if isSet(spec["nodeName"]) {
		c.add(RuleNodeName, base+".nodeName", "a tenant cannot place pods on a node by name; pools place them")
	}
	if v, ok := spec["schedulingGates"]; ok && v != nil && !isEmptyList(v) {
		c.add(RuleSchedulingGates, base+".schedulingGates", "a tenant's pods carry no scheduling gates: Kueue gates the pods it queues and removes its gate when it admits them")
	}
	c.priorityClass(spec["priorityClassName"], base+".priorityClassName")
	c.serviceAccount(spec, base)
	c.tolerations(spec["tolerations"], base+".tolerations")
	if sc, ok := spec["securityContext"]; ok && sc != nil {
		c.securityContext(mapAt(sc), base+".securityContext")
		for i, s := range listAt(mapAt(sc)["sysctls"]) {
			if !stringIn(mapAt(s)["name"], AllowedSysctls()) {
				c.add(RuleSysctls, fmt.Sprintf("%s.securityContext.sysctls[%d].name", base, i), "only the sysctls of the Pod Security baseline are allowed")
			}
		}
	}
	for _, list := range []string{"containers", "initContainers", "ephemeralContainers"} {
		for i, ct := range listAt(spec[list]) {
			c.container(mapAt(ct), fmt.Sprintf("%s.%s[%d]", base, list, i))
		}
	}
	c.volumes(spec, base)
}

func (c *policyCheck) priorityClass(v any, field string) {
	if v == nil {
		return
	}
	s, _ := v.(string)
	switch {
	case s == keys.PriorityClassHigh && !c.p.AllowHighPriority:
		c.add(RulePriorityClass, field, "%s is not allowed in namespace %q (tenancy.highPriorityNamespaces)", keys.PriorityClassHigh, c.p.Namespace)
	case stringIn(v, []string{"", keys.PriorityClassLow, keys.PriorityClassMedium, keys.PriorityClassHigh}):
	default:
		c.add(RulePriorityClass, field, "only the priority classes %s, %s and %s are allowed",
			keys.PriorityClassLow, keys.PriorityClassMedium, keys.PriorityClassHigh)
	}
}

func (c *policyCheck) serviceAccount(spec map[string]any, base string) {
	for _, f := range []string{"serviceAccountName", "serviceAccount"} {
		v, ok := spec[f]
		if !ok || v == nil {
			continue
		}
		s, isString := v.(string)
		switch {
		case !isString:
			c.add(RuleServiceAccount, base+"."+f, "expected a ServiceAccount name")
		case s == keys.TenantServiceAccount:
			c.add(RuleServiceAccount, base+"."+f, "%s is the identity that applies the namespace; pods may not run as it", keys.TenantServiceAccount)
		case s == "" || s == "default" || c.p.ServiceAccounts == nil || c.p.ServiceAccounts[s]:
		default:
			c.add(RuleServiceAccount, base+"."+f, "ServiceAccount %q is not declared in the tenant's directories", s)
		}
	}
}

func (c *policyCheck) tolerations(v any, base string) {
	for i, t := range listAt(v) {
		tm := mapAt(t)
		key, _ := tm["key"].(string)
		effect, _ := tm["effect"].(string)
		switch {
		case key == keys.ResourceGPU || (strings.HasPrefix(key, keys.Prefix) && len(key) > len(keys.Prefix)):
		case (key == corev1.TaintNodeNotReady || key == corev1.TaintNodeUnreachable) && effect == string(corev1.TaintEffectNoExecute):
		case key == "":
			c.add(RuleTolerations, fmt.Sprintf("%s[%d]", base, i), "a toleration without a key tolerates every taint")
		default:
			c.add(RuleTolerations, fmt.Sprintf("%s[%d].key", base, i), "only tolerations of %s and %s* taints are allowed", keys.ResourceGPU, keys.Prefix)
		}
	}
}

// securityContext checks what pod and container security contexts share.
func (c *policyCheck) securityContext(sc map[string]any, base string) {
	if t := mapAt(sc["seccompProfile"])["type"]; !stringIn(t, []string{
		string(corev1.SeccompProfileTypeRuntimeDefault), string(corev1.SeccompProfileTypeLocalhost)}) {
		c.add(RuleSeccomp, base+".seccompProfile.type", "the seccomp profile may not be Unconfined")
	}
	if t := mapAt(sc["appArmorProfile"])["type"]; !stringIn(t, []string{
		string(corev1.AppArmorProfileTypeRuntimeDefault), string(corev1.AppArmorProfileTypeLocalhost)}) {
		c.add(RuleAppArmor, base+".appArmorProfile.type", "only the AppArmor profiles RuntimeDefault and Localhost are allowed")
	}
	se := mapAt(sc["seLinuxOptions"])
	if !stringIn(se["type"], AllowedSELinuxTypes()) {
		c.add(RuleSELinux, base+".seLinuxOptions.type", "only the SELinux types %s are allowed", strings.Join(AllowedSELinuxTypes()[1:], ", "))
	}
	for _, f := range []string{"user", "role"} {
		if isSet(se[f]) {
			c.add(RuleSELinux, base+".seLinuxOptions."+f, "the SELinux %s may not be set", f)
		}
	}
	if isSet(mapAt(sc["windowsOptions"])["hostProcess"]) {
		c.add(RuleHostProcess, base+".windowsOptions.hostProcess", "Windows host processes are not allowed")
	}
}

func (c *policyCheck) container(ct map[string]any, base string) {
	if sc, ok := ct["securityContext"]; ok && sc != nil {
		scm, scBase := mapAt(sc), base+".securityContext"
		if isSet(scm["privileged"]) {
			c.add(RulePrivileged, scBase+".privileged", "privileged containers are not allowed in a tenant directory")
		}
		if add, ok := mapAt(scm["capabilities"])["add"]; ok && add != nil {
			if _, isList := add.([]any); !isList {
				c.add(RuleCapabilities, scBase+".capabilities.add", "expected a list of capabilities")
			}
			for i, cp := range listAt(add) {
				if !stringIn(cp, AllowedCapabilities()) {
					c.add(RuleCapabilities, fmt.Sprintf("%s.capabilities.add[%d]", scBase, i),
						"only the capabilities of the Pod Security baseline may be added (%s)", strings.Join(AllowedCapabilities(), ", "))
				}
			}
		}
		if !stringIn(scm["procMount"], []string{string(corev1.DefaultProcMount)}) {
			c.add(RuleProcMount, scBase+".procMount", "only the Default proc mount is allowed")
		}
		c.securityContext(scm, scBase)
	}
	for i, e := range listAt(ct["env"]) {
		if mapAt(e)["name"] == NvidiaVisibleDevices {
			c.add(RuleGPUDevices, fmt.Sprintf("%s.env[%d].name", base, i), "%s would give the container GPUs without a %s request; request GPUs as resources", NvidiaVisibleDevices, keys.ResourceGPU)
		}
	}
	for i, p := range listAt(ct["ports"]) {
		if isSet(mapAt(p)["hostPort"]) {
			c.add(RuleHostPorts, fmt.Sprintf("%s.ports[%d].hostPort", base, i), "host ports are not allowed in a tenant directory")
		}
	}
	handlers := []string{"livenessProbe", "readinessProbe", "startupProbe", "lifecycle.postStart", "lifecycle.preStop"}
	for _, h := range handlers {
		hm := ct
		for _, k := range strings.Split(h, ".") {
			hm = mapAt(hm[k])
		}
		for _, action := range []string{"httpGet", "tcpSocket"} {
			if isSet(mapAt(hm[action])["host"]) {
				c.add(RuleHostProbes, base+"."+h+"."+action+".host", "probes and lifecycle handlers may not name a host: the kubelet would connect to it from the node")
			}
		}
	}
}

// volumes checks hostPath volumes, their mounts, and ephemeral volume claims.
func (c *policyCheck) volumes(spec map[string]any, base string) {
	readOnly := map[string]string{} // hostPath volume name -> path, for those that must be read-only
	for i, v := range listAt(spec["volumes"]) {
		vm, field := mapAt(v), fmt.Sprintf("%s.volumes[%d]", base, i)
		for _, k := range sortedKeys(vm) {
			if k != "name" && !slices.Contains(AllowedVolumeTypes(), k) {
				c.add(RuleVolumeTypes, field+"."+k, "%s volumes mount or run what the tenant names on the node; allowed: %s", k, strings.Join(AllowedVolumeTypes(), ", "))
			}
		}
		if eph := mapAt(mapAt(vm["ephemeral"])["volumeClaimTemplate"]); eph != nil {
			c.volumeName(eph, field+".ephemeral.volumeClaimTemplate")
		}
		hp, ok := vm["hostPath"]
		if !ok || hp == nil {
			continue
		}
		p, writable := c.hostPath(mapAt(hp), field+".hostPath")
		if name, _ := vm["name"].(string); !writable {
			readOnly[name] = p
		}
	}
	if len(readOnly) == 0 {
		return
	}
	for _, list := range []string{"containers", "initContainers", "ephemeralContainers"} {
		for i, ct := range listAt(spec[list]) {
			for j, m := range listAt(mapAt(ct)["volumeMounts"]) {
				mm := mapAt(m)
				name, _ := mm["name"].(string)
				if p, ok := readOnly[name]; ok && mm["readOnly"] != true {
					c.add(RuleHostPath, fmt.Sprintf("%s.%s[%d].volumeMounts[%d].readOnly", base, list, i, j),
						"host path %q must be mounted read-only: only paths below %s are writable", p, orNone(c.p.WritableHostPathPrefixes))
				}
			}
		}
	}
}

// hostPath checks one hostPath volume; it returns the path and whether it may be written.
func (c *policyCheck) hostPath(hp map[string]any, base string) (string, bool) {
	p, _ := hp["path"].(string)
	switch {
	case !path.IsAbs(p):
		c.add(RuleHostPath, base+".path", "host path %q must be absolute", p)
		return p, false
	case slices.Contains(strings.Split(p, "/"), ".."):
		c.add(RuleHostPath, base+".path", "host path %q may not have a .. segment", p)
		return p, false
	}
	clean := path.Clean(p)
	if !underAny(clean, c.p.HostPathPrefixes) {
		c.add(RuleHostPath, base+".path", "host path %q is outside the allowed prefixes (%s)", p, orNone(c.p.HostPathPrefixes))
	}
	if t, ok := hp["type"]; ok && !stringIn(t, AllowedHostPathTypes()) {
		c.add(RuleHostPath, base+".type", "only the hostPath types Directory, DirectoryOrCreate, File and FileOrCreate are allowed")
	}
	return p, underAny(clean, c.p.WritableHostPathPrefixes)
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}
