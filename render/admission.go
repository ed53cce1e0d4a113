package render

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuctl/gpuctl/internal/keys"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The third layer of tenancy (docs/tenancy.md): a ValidatingAdmissionPolicy that holds every
// pod-creating request in the tenant namespaces to the tenant pod policy, whoever sends it (a
// team member's kubectl, a controller creating the pods of a Deployment, gpuctl itself). The
// rules are the ones render checks in Go; here they are CEL, evaluated by the API server
// after its own defaulting.

// Values of the pod policy that only admission needs.
var (
	// The tolerations the API server adds to every pod by itself (DefaultTolerationSeconds).
	defaultTolerationKeys = []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable}
	// The identities of the PersistentVolume binder of kube-controller-manager, with and
	// without --use-service-account-credentials: the only ones that may set the volumeName of
	// an unbound claim.
	volumeBinders = []string{"system:serviceaccount:kube-system:persistent-volume-binder", "system:kube-controller-manager"}
	// The identities of the controllers that may set or change ownerReferences and remove
	// scheduling gates (controllerIdentity): kube-controller-manager without
	// --use-service-account-credentials, and Kueue as its release manifests install it.
	controllerUsers = []string{"system:kube-controller-manager", "system:serviceaccount:kueue-system:kueue-controller-manager"}
	// The ServiceAccounts of kube-system: kube-controller-manager's controllers with
	// --use-service-account-credentials (replicaset-controller, job-controller,
	// generic-garbage-collector, ...).
	controllerPrefix = "system:serviceaccount:kube-system:"
	// The group of the cluster's administrators, who can change the policy anyway.
	mastersGroup = "system:masters"
	// The values of a Job's spec.managedBy that keep it in Kueue's queue: Kubernetes' Job
	// controller, and Kueue's MultiKueue, which its webhook sets where MultiKueue is on.
	jobManagers = []string{JobControllerName, "kueue.x-k8s.io/multikueue"}
	// The resources whose objects create pods: their ownerReferences decide whether Kueue
	// queues them (RuleOwnerReferences).
	podCreatingResources = []string{"pods", "replicationcontrollers", "deployments", "statefulsets", "replicasets", "daemonsets", "jobs", "cronjobs"}
)

// podPolicyResources are the resources whose requests the policy holds, by API group.
var podPolicyResources = []struct{ group, resources []string }{
	{[]string{""}, []string{"pods", "pods/ephemeralcontainers", "replicationcontrollers", "services", "persistentvolumeclaims"}},
	{[]string{"apps"}, []string{"deployments", "statefulsets", "replicasets", "daemonsets"}},
	{[]string{"batch"}, []string{"jobs", "cronjobs"}},
	{[]string{"networking.k8s.io"}, []string{"ingresses"}},
}

// appendAdmissionPolicy adds the pod policy's admission objects for the run's tenant
// namespaces: the admin's objects, from the configuration file.
func (st *run) appendAdmissionPolicy(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	tenants := make([]string, 0, len(st.tenants))
	for ns := range st.tenants {
		tenants = append(tenants, ns)
	}
	configFile := st.displayOf(filepath.Join(st.repo, keys.ConfigFile))
	for _, o := range AdmissionPolicy(st.cfg, tenants) {
		objs = st.add(objs, o, configFile, Pos{})
	}
	return objs
}

// AdmissionPolicy renders the ValidatingAdmissionPolicy keys.PodPolicyName and its binding of
// the same name, which deny every CREATE and UPDATE of a pod, a pod-creating workload, a
// Service or a PersistentVolumeClaim in the tenant namespaces that breaks the tenant pod
// policy configured by cfg (host-path prefixes, writable prefixes, high-priority
// namespaces). It returns nothing when tenants is empty or cfg switches admission off
// (tenancy.admission: false). The result does not depend on the order of tenants.
func AdmissionPolicy(cfg *Config, tenants []string) []*unstructured.Unstructured {
	if len(tenants) == 0 || !cfg.admission() {
		return nil
	}
	tenants = slices.Clone(tenants)
	slices.Sort(tenants)
	tenants = slices.Compact(tenants)
	fail := admissionv1.Fail
	var rules []admissionv1.NamedRuleWithOperations
	for _, r := range podPolicyResources {
		rules = append(rules, admissionv1.NamedRuleWithOperations{RuleWithOperations: admissionv1.RuleWithOperations{
			Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
			Rule:       admissionv1.Rule{APIGroups: r.group, APIVersions: []string{"*"}, Resources: r.resources},
		}})
	}
	p := newPodPolicy(cfg)
	// The admin's objects: their source is the configuration, as the tenant identities'.
	meta := metav1.ObjectMeta{Name: keys.PodPolicyName, Labels: managedLabels(), Annotations: map[string]string{keys.Source: keys.ConfigFile}}
	policy := &admissionv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: meta,
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    &fail,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: rules},
			MatchConditions: []admissionv1.MatchCondition{{Name: "changes-the-spec",
				Expression: changesSpec + " || (" + changesOwners + " && !" + controllerIdentity(cfg) + ")"}},
			Variables:   p.vars,
			Validations: p.vals,
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: meta,
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        keys.PodPolicyName,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
			MatchResources: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchExpressions: []metav1.LabelSelectorRequirement{{
					Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: tenants}},
			}},
		},
	}
	return []*unstructured.Unstructured{toUnstructured(policy), toUnstructured(binding)}
}

// admission reports whether the admission policy is rendered (tenancy.admission, default true).
func (c *Config) admission() bool {
	return c == nil || c.Tenancy.Admission == nil || *c.Tenancy.Admission
}

// changesSpec skips an UPDATE that leaves the spec (and a Pod's or an Ingress's annotations) as it was: the
// finalizers, labels and owner references that controllers and the garbage collector write
// on existing objects, as Pod Security admission does. Everything a pod runs with is in the
// spec, so nothing new runs without the policy's check. The match condition adds the UPDATEs
// that change the ownerReferences (changesOwners) by anyone but a controller, which the rule
// owner-references refuses.
const changesSpec = "request.operation != 'UPDATE' || !has(object.spec) || !has(oldObject.spec) || object.spec != oldObject.spec" +
	" || (request.resource.resource in ['pods', 'ingresses'] && (has(object.metadata.annotations) ? object.metadata.annotations : {}) != (has(oldObject.metadata.annotations) ? oldObject.metadata.annotations : {}))"

// changesOwners holds for an UPDATE that changes the object's ownerReferences, or the labels
// of a pod that has an owner (its controller would let it go: relabeledOwnedPod).
const changesOwners = "(request.operation == 'UPDATE' && ((has(object.metadata.ownerReferences) ? object.metadata.ownerReferences : [])" +
	" != (has(oldObject.metadata.ownerReferences) ? oldObject.metadata.ownerReferences : []) || " + relabeledOwnedPod + "))"

// relabeledOwnedPod holds for an UPDATE of a pod that has an owner and whose labels change.
// Its controller (a Job's, a ReplicaSet's) lets go of a pod whose labels no longer match
// its selector and starts another: the released pod would keep running outside its Job's
// Workload, with GPUs that Kueue no longer counts.
const relabeledOwnedPod = "(request.resource.resource == 'pods' && has(oldObject.metadata.ownerReferences) && size(oldObject.metadata.ownerReferences) > 0" +
	" && (has(object.metadata.labels) ? object.metadata.labels : {}) != (has(oldObject.metadata.labels) ? oldObject.metadata.labels : {}))"

// controllerIdentity is a CEL expression that holds when the request comes from a controller
// (controllerUsers, JobSetControllerUser with multiNode jobset, a ServiceAccount of
// kube-system, a member of system:masters, or a user of tenancy.controllers): the only ones that may set ownerReferences in a tenant namespace and
// remove a pod's scheduling gates. A team member's kubectl, the team's own pods and gpuctl's
// tenant identity are none of them.
func controllerIdentity(cfg *Config) string {
	users := slices.Clone(controllerUsers)
	if cfg.multiNode() == MultiNodeJobSet {
		users = append(users, JobSetControllerUser)
	}
	if cfg != nil {
		users = append(users, cfg.Tenancy.Controllers...)
	}
	return "(request.userInfo.username in " + celList(users) + " || request.userInfo.username.startsWith(" + celQuote(controllerPrefix) + ")" +
		" || (has(request.userInfo.groups) && " + celQuote(mastersGroup) + " in request.userInfo.groups))"
}

// podPolicy builds the variables and validations of the policy for one configuration. Most
// rules are a variable listing the rule's offenders in the request (e.g. "container app") and
// a validation that the list is empty, whose message names them.
type podPolicy struct {
	cfg  *Config
	vars []admissionv1.Variable
	vals []admissionv1.Validation
}

func newPodPolicy(cfg *Config) *podPolicy {
	p := &podPolicy{cfg: cfg}
	p.podSpec()
	p.securityRules()
	p.hostPath()
	p.gpuctlRules()
	p.serviceAndClaimRules()
	p.queueRules()
	return p
}

// variable adds a variable; later expressions refer to it as variables.<name>.
func (p *podPolicy) variable(name, expr string) {
	p.vars = append(p.vars, admissionv1.Variable{Name: name, Expression: expr})
}

// offenders adds the variable name, a CEL list of strings naming what breaks the rule, and
// the validation that it is empty; tail says what the rule requires.
func (p *podPolicy) offenders(rule, name, list, tail string) {
	p.variable(name, list)
	p.vals = append(p.vals, admissionv1.Validation{
		Expression:        "size(variables." + name + ") == 0",
		Message:           "pod policy " + rule + ": refused (docs/tenancy.md)",
		MessageExpression: celQuote("pod policy "+rule+": ") + " + variables." + name + ".join(', ') + " + celQuote(tail),
	})
}

// validation adds a validation whose message expression names the offending value.
func (p *podPolicy) validation(expr, msg, msgExpr string) {
	p.vals = append(p.vals, admissionv1.Validation{Expression: expr, Message: msg, MessageExpression: msgExpr})
}

// podSpec defines the variables that reach the pod of every kind: a Pod itself, a template,
// a CronJob's job template's template. A Service or PersistentVolumeClaim has an empty pod,
// for which every pod rule holds.
func (p *podPolicy) podSpec() {
	p.variable("resource", "request.resource.resource")
	p.variable("pod", "variables.resource == 'pods' ? object : variables.resource == 'cronjobs' ? object.spec.jobTemplate.spec.template"+
		" : variables.resource in ['services', 'persistentvolumeclaims', 'ingresses'] ? {} : object.spec.template")
	p.variable("spec", "has(variables.pod.spec) ? variables.pod.spec : {}")
	p.variable("annotations", "has(variables.pod.metadata) && has(variables.pod.metadata.annotations) ? variables.pod.metadata.annotations : {}")
	p.variable("containers", "(has(variables.spec.containers) ? variables.spec.containers : [])"+
		" + (has(variables.spec.initContainers) ? variables.spec.initContainers : [])"+
		" + (has(variables.spec.ephemeralContainers) ? variables.spec.ephemeralContainers : [])")
	p.variable("podSecurityContext", "has(variables.spec.securityContext) ? variables.spec.securityContext : {}")
	p.variable("volumes", "has(variables.spec.volumes) ? variables.spec.volumes : []")
}

// securityRules are Pod Security "baseline": every rule but host-path and gpuctl's own.
func (p *podPolicy) securityRules() {
	caps := celList(AllowedCapabilities())
	p.offenders(RuleHostNamespaces, "hostNamespaces",
		"['hostNetwork', 'hostPID', 'hostIPC'].filter(f, f in variables.spec && variables.spec[f] == true)", " must be unset or false")
	p.offenders(RulePrivileged, "privileged", containers("has(c.securityContext) && has(c.securityContext.privileged) && c.securityContext.privileged",
		"'container ' + c.name"), ": securityContext.privileged must be unset or false")
	p.offenders(RuleCapabilities, "capabilities", containers("has(c.securityContext) && has(c.securityContext.capabilities)"+
		" && has(c.securityContext.capabilities.add) && c.securityContext.capabilities.add.exists(a, !(a in "+caps+"))",
		"'container ' + c.name + ' adds ' + c.securityContext.capabilities.add.filter(a, !(a in "+caps+")).join(', ')"),
		"; capabilities.add may only hold "+strings.Join(AllowedCapabilities(), ", "))
	p.offenders(RuleHostPorts, "hostPorts", containers("has(c.ports) && c.ports.exists(p, has(p.hostPort) && p.hostPort != 0)",
		"'container ' + c.name"), ": ports[].hostPort must be unset or 0")
	// Probes and lifecycle handlers that name a host: the kubelet would connect to it from the node.
	handlers := "(['livenessProbe', 'readinessProbe', 'startupProbe'].filter(h, h in c).map(h, c[h])" +
		" + (has(c.lifecycle) ? ['postStart', 'preStop'].filter(h, h in c.lifecycle).map(h, c.lifecycle[h]) : []))"
	p.offenders(RuleGPUDevices, "gpuDevices", containers("has(c.env) && c.env.exists(e, e.name == "+celQuote(NvidiaVisibleDevices)+")",
		"'container ' + c.name"), ": "+NvidiaVisibleDevices+" must not be set; request GPUs as "+keys.ResourceGPU+" resources")
	p.offenders(RuleHostProbes, "hostProbes", containers(handlers+".exists(x, ['httpGet', 'tcpSocket'].exists(a, a in x && has(x[a].host) && x[a].host != ''))",
		"'container ' + c.name"), ": probes and lifecycle handlers may not name a host")
	p.offenders(RuleAppArmor, "appArmorAnnotations", annotations("k.startsWith("+celQuote(AppArmorAnnotationPrefix)+")",
		"!(VALUE == 'runtime/default' || VALUE.startsWith('localhost/'))"), ": only runtime/default or localhost/* is allowed")
	p.offenders(RuleAppArmor, "appArmorProfiles", securityContexts("has(SC.appArmorProfile) && has(SC.appArmorProfile.type)"+
		" && !(SC.appArmorProfile.type in ['RuntimeDefault', 'Localhost'])"), ": appArmorProfile.type must be RuntimeDefault or Localhost")
	p.offenders(RuleSELinux, "seLinux", securityContexts("has(SC.seLinuxOptions) && ((has(SC.seLinuxOptions.type) && !(SC.seLinuxOptions.type in "+
		celList(AllowedSELinuxTypes())+")) || (has(SC.seLinuxOptions.user) && SC.seLinuxOptions.user != '')"+
		" || (has(SC.seLinuxOptions.role) && SC.seLinuxOptions.role != ''))"),
		": seLinuxOptions.type must be empty, "+strings.Join(AllowedSELinuxTypes()[1:], ", ")+"; user and role unset")
	p.offenders(RuleProcMount, "procMount", containers("has(c.securityContext) && has(c.securityContext.procMount) && c.securityContext.procMount != 'Default'",
		"'container ' + c.name"), ": securityContext.procMount must be unset or Default")
	p.offenders(RuleSeccomp, "seccompProfiles", securityContexts("has(SC.seccompProfile) && has(SC.seccompProfile.type) && SC.seccompProfile.type == 'Unconfined'"),
		": seccompProfile.type must not be Unconfined")
	// The API server still turns these annotations into seccompProfile fields of a new Pod.
	p.offenders(RuleSeccomp, "seccompAnnotations", annotations("k == 'seccomp.security.alpha.kubernetes.io/pod'"+
		" || k.startsWith('container.seccomp.security.alpha.kubernetes.io/')", "VALUE == 'unconfined'"), ": must not be unconfined")
	sysctls := celList(AllowedSysctls())
	p.offenders(RuleSysctls, "sysctls", "has(variables.podSecurityContext.sysctls) ? variables.podSecurityContext.sysctls.filter(s, !(s.name in "+sysctls+
		")).map(s, 'sysctl ' + s.name) : []", " not allowed; allowed: "+strings.Join(AllowedSysctls(), ", "))
	p.offenders(RuleHostProcess, "hostProcess", securityContexts("has(SC.windowsOptions) && has(SC.windowsOptions.hostProcess) && SC.windowsOptions.hostProcess"),
		": windowsOptions.hostProcess must be unset or false")
}

// hostPath is rule 4: hostPath volumes only at or below the allowed prefixes, of a type that
// cannot reach a socket or device, mounted readOnly unless at or below a writable prefix.
func (p *podPolicy) hostPath() {
	prefixes, writable := p.cfg.hostPathPrefixes(), p.cfg.writableHostPathPrefixes()
	refused := celList(RefusedVolumeTypes())
	p.offenders(RuleVolumeTypes, "volumeTypes", "variables.volumes.filter(v, "+refused+".exists(t, t in v)).map(v, 'volume ' + v.name + ' of type ' + "+
		refused+".filter(t, t in v).join(', '))", ": only volumes of the types "+strings.Join(AllowedVolumeTypes(), ", ")+" are allowed")
	p.variable("hostPathVolumes", "variables.volumes.filter(v, has(v.hostPath))")
	p.offenders(RuleHostPath, "hostPathsOutside", "variables.hostPathVolumes.filter(v, !"+under("v.hostPath.path", prefixes)+
		" || v.hostPath.path.contains('/../') || v.hostPath.path.endsWith('/..')).map(v, 'volume ' + v.name + ' path ' + v.hostPath.path)",
		" outside the allowed host paths ("+orNone(prefixes)+"; no .. segments)")
	p.offenders(RuleHostPath, "hostPathTypes", "variables.hostPathVolumes.filter(v, has(v.hostPath.type) && !(v.hostPath.type in "+celList(AllowedHostPathTypes())+
		")).map(v, 'volume ' + v.name + ' type ' + v.hostPath.type)", ": the type must be unset, Directory, DirectoryOrCreate, File or FileOrCreate")
	p.variable("readOnlyHostPaths", "variables.hostPathVolumes.filter(v, !"+under("v.hostPath.path", writable)+").map(v, v.name)")
	rw := "m.name in variables.readOnlyHostPaths && !(has(m.readOnly) && m.readOnly)"
	p.offenders(RuleHostPath, "hostPathsWritable", containers("has(c.volumeMounts) && c.volumeMounts.exists(m, "+rw+")",
		"'container ' + c.name + ' mounts ' + c.volumeMounts.filter(m, "+rw+").map(m, m.name).join(', ')"),
		" read-write: only paths below "+orNone(writable)+" are writable; mount the others readOnly")
}

// gpuctlRules are rules 12-15: no nodeName, tolerations of gpuctl's taints only, gpuctl's
// priority classes, never the tenant's own applying identity.
func (p *podPolicy) gpuctlRules() {
	// The scheduler binds a pod by setting its nodeName (pods/binding, which is not matched);
	// later updates of a bound pod keep it.
	p.validation("!has(variables.spec.nodeName) || variables.spec.nodeName == ''"+
		" || (request.operation == 'UPDATE' && variables.resource == 'pods' && has(oldObject.spec.nodeName) && oldObject.spec.nodeName == variables.spec.nodeName)",
		"pod policy node-name: spec.nodeName must be unset: pools place pods on nodes",
		"'pod policy node-name: spec.nodeName ' + variables.spec.nodeName + ' must be unset: pools place pods on nodes'")
	ok := "has(t.key) && (t.key == " + celQuote(keys.ResourceGPU) + " || t.key.startsWith(" + celQuote(keys.Prefix) + ")" +
		" || (t.key in " + celList(defaultTolerationKeys) + " && has(t.effect) && t.effect == 'NoExecute'))"
	p.offenders(RuleTolerations, "tolerations", "has(variables.spec.tolerations) ? variables.spec.tolerations.filter(t, !("+ok+
		")).map(t, has(t.key) && t.key != '' ? 'toleration of ' + t.key : 'toleration with an empty key (of every taint)') : []",
		": a toleration's key must be "+keys.ResourceGPU+" or start with "+keys.Prefix)
	high, where := "true", "any tenant namespace"
	if hp := p.highPriorityNamespaces(); len(hp) > 0 {
		high, where = "request.namespace in "+celList(hp), strings.Join(hp, ", ")
	}
	allowed := "allowed: unset, " + keys.PriorityClassLow + ", " + keys.PriorityClassMedium + ", and " + keys.PriorityClassHigh + " in " + where
	p.validation("!has(variables.spec.priorityClassName) || variables.spec.priorityClassName in "+
		celList([]string{"", keys.PriorityClassLow, keys.PriorityClassMedium})+
		" || (variables.spec.priorityClassName == "+celQuote(keys.PriorityClassHigh)+" && "+high+")",
		"pod policy priority-class: "+allowed,
		"'pod policy priority-class: priorityClassName ' + variables.spec.priorityClassName + ' is not allowed in namespace ' + request.namespace + "+
			celQuote(" ("+allowed+")"))
	p.offenders(RuleServiceAccount, "serviceAccount", "['serviceAccountName', 'serviceAccount'].filter(f, f in variables.spec && variables.spec[f] == "+
		celQuote(keys.TenantServiceAccount)+").map(f, 'spec.' + f)",
		" must not be "+keys.TenantServiceAccount+", the identity that applies the namespace")
}

// serviceAndClaimRules refuse a Service's externalIPs and type ExternalName, an Ingress's
// configuration snippets, and claims that pick their
// PersistentVolume: a PVC's volumeName (set only by the volume binder when it binds an
// unbound claim), and the claim templates of generic ephemeral volumes and StatefulSets, whose
// claims would be refused when their controller creates them.
func (p *podPolicy) serviceAndClaimRules() {
	p.validation("variables.resource != 'services' || !has(object.spec.externalIPs) || size(object.spec.externalIPs) == 0",
		"pod policy external-ips: a Service's spec.externalIPs must be empty",
		"'pod policy external-ips: spec.externalIPs ' + object.spec.externalIPs.join(', ') + ' must be empty'")
	p.validation("variables.resource != 'services' || !has(object.spec.type) || object.spec.type != 'ExternalName'",
		"pod policy external-name: a Service may not be of type ExternalName",
		"'pod policy external-name: a Service may not be of type ExternalName (' + object.spec.externalName + ')'")
	p.offenders(RuleIngressSnippets, "snippets", "variables.resource == 'ingresses' && has(object.metadata.annotations) ? "+
		"object.metadata.annotations.filter(k, k.endsWith('-snippet') || k.endsWith('-snippets')).map(k, 'annotation ' + k) : []",
		": ingress configuration snippets are not allowed")
	named := func(spec string) string { return "has(" + spec + ".volumeName) && " + spec + ".volumeName != ''" }
	p.validation("variables.resource != 'persistentvolumeclaims' || !("+named("object.spec")+")"+
		" || (request.operation == 'UPDATE' && ((has(oldObject.spec.volumeName) && oldObject.spec.volumeName == object.spec.volumeName)"+
		" || request.userInfo.username in "+celList(volumeBinders)+"))",
		"pod policy volume-name: a PersistentVolumeClaim's spec.volumeName must be empty",
		"'pod policy volume-name: spec.volumeName ' + object.spec.volumeName + ' must be empty: a claim may not pick its PersistentVolume'")
	p.offenders(RuleVolumeName, "ephemeralVolumeNames", "variables.volumes.filter(v, has(v.ephemeral) && has(v.ephemeral.volumeClaimTemplate) && "+
		named("v.ephemeral.volumeClaimTemplate.spec")+").map(v, 'volume ' + v.name)", ": an ephemeral volume's claim template must not set volumeName")
	p.validation("variables.resource != 'statefulsets' || !has(object.spec.volumeClaimTemplates) || !object.spec.volumeClaimTemplates.exists(t, "+named("t.spec")+")",
		"pod policy volume-name: a StatefulSet's volumeClaimTemplates must not set volumeName", "")
}

// queueRules hold the ways around Kueue's queue that a request can take: an owner that
// Kueue takes for one of its integrations, or that the garbage collector cannot resolve
// (owner-references, on every CREATE of a pod-creating object and every change of its
// ownerReferences), a Job handed to another manager (managed-by), and a pod un-gated by hand
// (scheduling-gates). Controllers may do all three.
func (p *podPolicy) queueRules() {
	p.variable("controller", controllerIdentity(p.cfg))
	p.variable("owners", "has(object.metadata.ownerReferences) ? object.metadata.ownerReferences : []")
	p.variable("oldOwners", "request.operation == 'UPDATE' && has(oldObject.metadata.ownerReferences) ? oldObject.metadata.ownerReferences : []")
	p.validation("!(variables.resource in "+celList(podCreatingResources)+") || variables.controller || variables.owners == variables.oldOwners",
		"pod policy owner-references: only a controller sets or changes the ownerReferences of a pod or of an object that creates pods",
		"'pod policy owner-references: ownerReferences ' + (size(variables.owners) == 0 ? '(removed)' : variables.owners.map(o, o.kind + ' ' + o.name).join(', ')) + "+
			celQuote(" may only be set or changed by a controller (kube-controller-manager, Kueue, tenancy.controllers), not by "+
				"")+" + request.userInfo.username + "+celQuote(": Kueue does not queue what a forged owner claims"))
	p.validation("variables.controller || request.operation != 'UPDATE' || !"+relabeledOwnedPod,
		"pod policy owner-references: only a controller changes the labels of a pod that has an owner",
		"'pod policy owner-references: the labels of a pod of ' + oldObject.metadata.ownerReferences.map(o, o.kind + ' ' + o.name).join(', ') + "+
			"' may only be changed by a controller, not by ' + request.userInfo.username + "+celQuote(": its controller would let it go and start another outside the queue"))
	p.variable("jobSpec", "variables.resource == 'jobs' ? object.spec : variables.resource == 'cronjobs' && has(object.spec.jobTemplate.spec) ? object.spec.jobTemplate.spec : {}")
	p.validation("variables.controller || !has(variables.jobSpec.managedBy) || variables.jobSpec.managedBy in "+celList(jobManagers),
		"pod policy managed-by: a Job's spec.managedBy must be unset or "+JobControllerName,
		"'pod policy managed-by: spec.managedBy ' + variables.jobSpec.managedBy + "+celQuote(" must be unset or "+JobControllerName+": another manager would take the Job out of the team's queue"))
	p.variable("removedGates", "variables.resource == 'pods' && request.operation == 'UPDATE' && has(oldObject.spec.schedulingGates) ? "+
		"oldObject.spec.schedulingGates.filter(g, !(has(object.spec.schedulingGates) && object.spec.schedulingGates.exists(h, h.name == g.name))).map(g, g.name) : []")
	p.validation("variables.controller || size(variables.removedGates) == 0",
		"pod policy scheduling-gates: only a controller removes a pod's scheduling gates",
		"'pod policy scheduling-gates: gate ' + variables.removedGates.join(', ') + ' may only be removed by Kueue or the controller that set it, not by ' + request.userInfo.username")
}

// highPriorityNamespaces are the configured namespaces that may use gpuctl-high, sorted.
func (p *podPolicy) highPriorityNamespaces() []string {
	if p.cfg == nil {
		return nil
	}
	hp := slices.Clone(p.cfg.Tenancy.HighPriorityNamespaces)
	slices.Sort(hp)
	return slices.Compact(hp)
}

// containers is a CEL list naming (by the string expression who) every container c
// (containers, initContainers, ephemeralContainers) for which bad holds.
func containers(bad, who string) string {
	return "variables.containers.filter(c, " + bad + ").map(c, " + who + ")"
}

// securityContexts is a CEL list naming the pod's securityContext and every container's for
// which bad holds, with SC standing for the securityContext.
func securityContexts(bad string) string {
	at := func(sc string) string { return "(" + strings.ReplaceAll(bad, "SC.", sc+".") + ")" }
	return "(" + at("variables.podSecurityContext") + " ? ['pod securityContext'] : []) + " +
		containers("has(c.securityContext) && "+at("c.securityContext"), "'container ' + c.name")
}

// annotations is a CEL list naming every pod annotation k that match selects and whose
// value (VALUE in bad) bad refuses.
func annotations(match, bad string) string {
	cond := "(" + match + ") && " + strings.ReplaceAll(bad, "VALUE", "variables.annotations[k]")
	return "variables.annotations.filter(k, " + cond + ").map(k, 'annotation ' + k + '=' + variables.annotations[k])"
}

// under is a CEL expression that holds when the path expression p is one of prefixes or
// below one.
func under(p string, prefixes []string) string {
	if len(prefixes) == 0 {
		return "false"
	}
	terms := make([]string, len(prefixes))
	for i, pre := range prefixes {
		terms[i] = p + " == " + celQuote(pre) + " || " + p + ".startsWith(" + celQuote(pre+"/") + ")"
	}
	return "(" + strings.Join(terms, " || ") + ")"
}

// celQuote is a CEL string literal of s (Go's escapes are CEL's).
func celQuote(s string) string { return strconv.Quote(s) }

// celList is a CEL list literal of strings.
func celList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = celQuote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
