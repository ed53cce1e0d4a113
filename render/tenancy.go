package render

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Tenancy rules other than the pod policy, as messages name them ("tenancy <rule>: ...").
const (
	ruleReservedNamespace  = "reserved-namespace"
	ruleAllowedNamespaces  = "allowed-namespaces"
	ruleKinds              = "kinds"
	ruleReservedName       = "reserved-name"
	ruleReservedAnnotation = "reserved-annotation"
	ruleAdminFile          = "admin-file"
)

// clusterScopedKinds are well-known cluster-scoped kinds (Kind.group): tenancy.kinds may not
// name them. Tenant directories are held by the allow-list of tenancy.kinds, not by this list.
var clusterScopedKinds = map[string]bool{
	"Namespace": true, "Node": true, "PersistentVolume": true, "ComponentStatus": true,
	"ClusterRole.rbac.authorization.k8s.io": true, "ClusterRoleBinding.rbac.authorization.k8s.io": true,
	"PriorityClass.scheduling.k8s.io": true, "StorageClass.storage.k8s.io": true, "CSIDriver.storage.k8s.io": true,
	"CSINode.storage.k8s.io": true, "VolumeAttachment.storage.k8s.io": true,
	"CustomResourceDefinition.apiextensions.k8s.io": true, "APIService.apiregistration.k8s.io": true,
	"IngressClass.networking.k8s.io": true, "RuntimeClass.node.k8s.io": true,
	"ValidatingWebhookConfiguration.admissionregistration.k8s.io":   true,
	"MutatingWebhookConfiguration.admissionregistration.k8s.io":     true,
	"ValidatingAdmissionPolicy.admissionregistration.k8s.io":        true,
	"ValidatingAdmissionPolicyBinding.admissionregistration.k8s.io": true,
	"MutatingAdmissionPolicy.admissionregistration.k8s.io":          true,
	"MutatingAdmissionPolicyBinding.admissionregistration.k8s.io":   true,
	"FlowSchema.flowcontrol.apiserver.k8s.io":                       true,
	"PriorityLevelConfiguration.flowcontrol.apiserver.k8s.io":       true,
	"CertificateSigningRequest.certificates.k8s.io":                 true,
	"DeviceClass.resource.k8s.io":                                   true,
}

// kindPattern is a Kubernetes kind: a Go-style identifier.
var kindPattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*$`)

// The checks of nameProblem run for every manifest of every render: names that are valid, as
// nearly all are, are told by these byte loops; only the others are handed to the validation
// functions (regular expressions), for their messages.

func dns1123Label(s string) []string {
	if len(s) <= validation.DNS1123LabelMaxLength && isLabel(s, false) {
		return nil
	}
	return validation.IsDNS1123Label(s)
}

func dns1035Label(s string) []string {
	if len(s) <= validation.DNS1035LabelMaxLength && isLabel(s, true) {
		return nil
	}
	return validation.IsDNS1035Label(s)
}

func dns1123Subdomain(s string) []string {
	if len(s) <= validation.DNS1123SubdomainMaxLength && s != "" {
		ok := true
		for label := range strings.SplitSeq(s, ".") {
			if !isLabel(label, false) {
				ok = false
				break
			}
		}
		if ok {
			return nil
		}
	}
	return validation.IsDNS1123Subdomain(s)
}

// isLabel tells [a-z0-9]([-a-z0-9]*[a-z0-9])? ([a-z] first when letterFirst), any length.
func isLabel(s string, letterFirst bool) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9':
			if i == 0 && letterFirst {
				return false
			}
		case c == '-':
			if i == 0 || i == len(s)-1 {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// isKind is kindPattern.MatchString.
func isKind(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// rbacNamePattern allows the names RBAC objects use (system:controller:...), nothing that
// could break a line or a Markdown table.
var rbacNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9:._@+-]*$`)

// kindKey names a kind as tenancy.kinds does: Kind for the core group, else Kind.group.
func kindKey(apiVersion, kind string) string {
	group, _, found := strings.Cut(apiVersion, "/")
	if !found || group == "" {
		return kind
	}
	return kind + "." + group
}

// nameProblem checks the apiVersion, kind, metadata.name and metadata.namespace of a plain
// object. Names are echoed in messages, the daemon's status and pull-request comments, so
// only DNS names are accepted: DNS-1123 labels for Namespaces and Services, RBAC's
// colon-separated names for RBAC kinds, DNS-1123 subdomains for the rest. It returns the
// first field that fails and why.
func nameProblem(m map[string]any) (field, problem string) {
	apiVersion, _ := m["apiVersion"].(string)
	group, version, found := strings.Cut(apiVersion, "/")
	if !found {
		group, version = "", apiVersion
	}
	if errs := dns1035Label(version); len(errs) > 0 {
		return "apiVersion", fmt.Sprintf("%q is not a valid API version: %s", apiVersion, errs[0])
	}
	if errs := dns1123Subdomain(group); found && len(errs) > 0 {
		return "apiVersion", fmt.Sprintf("%q is not a valid API group: %s", group, errs[0])
	}
	kind, _ := m["kind"].(string)
	if !isKind(kind) {
		return "kind", fmt.Sprintf("%q is not a valid kind: letters and digits only, starting with a letter", kind)
	}
	meta := mapAt(m["metadata"])
	name, _ := meta["name"].(string)
	var errs []string
	switch {
	case group == "" && (kind == "Namespace" || kind == "Service"):
		errs = dns1123Label(name)
	case group == rbacv1.GroupName:
		if !rbacNamePattern.MatchString(name) || len(name) > validation.DNS1123SubdomainMaxLength {
			errs = []string{"letters, digits and :._@+- only, starting with a letter or digit"}
		}
	default:
		errs = dns1123Subdomain(name)
	}
	if len(errs) > 0 {
		return "metadata.name", fmt.Sprintf("%q is not a valid %s name: %s", name, kind, errs[0])
	}
	if ns, ok := meta["namespace"]; ok && ns != nil {
		s, isString := ns.(string)
		if !isString {
			return "metadata.namespace", "expected a string"
		}
		if errs := dns1123Label(s); s != "" && len(errs) > 0 {
			return "metadata.namespace", fmt.Sprintf("%q is not a valid namespace name: %s", s, errs[0])
		}
	}
	return "", ""
}

// tenancyProblem formats a tenancy rule's message.
func tenancyProblem(rule, format string, args ...any) string {
	return "tenancy " + rule + ": " + fmt.Sprintf(format, args...)
}

// bookkeeping are the annotations that gpuctl writes itself, with what each records: one
// written by a team's file would make the engine skip its object (keys.Encrypted), steer the
// plan's Secret checks (keys.SecretRefs), or keep a live Job that a sync should update
// (keys.SpecDigest, keys.KeptHash).
var bookkeeping = []struct{ key, records string }{
	{keys.Encrypted, "a file rendered without its SOPS key"},
	{keys.SecretRefs, "a workload's Secret references"},
	{keys.SpecDigest, "a training job's spec digest"},
	{keys.KeptHash, "an object a sync kept as it is"},
}

// reservedUse says how a tenant object takes what gpuctl reserves: the name of the tenant
// identity, a token Secret of it, the admin's adopt annotation, or an annotation of gpuctl's
// bookkeeping other than rendered, those that render itself may have written on it (on the
// objects of a sealed file, or of kustomize output, which holds rendered workloads). It
// returns the rule, the field and the problem, or "" when the object takes nothing.
func reservedUse(u *unstructured.Unstructured, key, ns string, rendered ...string) (rule, field, problem string) {
	ann := u.GetAnnotations()
	switch {
	case u.GetName() == keys.TenantServiceAccount && (key == "ServiceAccount" || key == "RoleBinding."+rbacv1.GroupName):
		return ruleReservedName, "metadata.name", fmt.Sprintf("%s %s is the tenant identity that gpuctl renders for namespace %q; choose another name",
			u.GetKind(), u.GetName(), ns)
	case key == "Secret" && u.Object["type"] == string(corev1.SecretTypeServiceAccountToken) && ann[corev1.ServiceAccountNameKey] == keys.TenantServiceAccount:
		return ruleReservedName, "metadata.annotations[" + corev1.ServiceAccountNameKey + "]",
			"a token Secret of the tenant identity " + keys.TenantServiceAccount + " would hand its credentials to the namespace"
	}
	if _, ok := ann[keys.Adopt]; ok {
		return ruleReservedAnnotation, "metadata.annotations[" + keys.Adopt + "]", "only an admin marks a live object adoptable, never a tenant's file"
	}
	for _, b := range bookkeeping {
		if _, ok := ann[b.key]; ok && !slices.Contains(rendered, b.key) {
			return ruleReservedAnnotation, "metadata.annotations[" + b.key + "]", "gpuctl's own record (" + b.records + "), never a tenant's file"
		}
	}
	return "", "", ""
}

// sealedKeys are the bookkeeping annotations that render writes on the objects of s: keys.Encrypted on a
// sealed file's.
func sealedKeys(s *source) []string {
	if s.sealed {
		return []string{keys.Encrypted}
	}
	return nil
}

// tenancyCheck holds what the checks of tenant directories need during one validation: the
// allowed kinds, the ServiceAccounts each tenant declares, and files read again for positions.
type tenancyCheck struct {
	st    *run
	kinds map[string]bool
	sas   map[string]map[string]bool // namespace -> declared ServiceAccount names
	nodes map[*source][]*yaml.Node
}

func (st *run) newTenancyCheck() *tenancyCheck {
	return &tenancyCheck{st: st, kinds: st.cfg.tenantKinds(), sas: st.declaredServiceAccounts(), nodes: map[*source][]*yaml.Node{}}
}

// declaredServiceAccounts lists the ServiceAccounts that the files of each tenant namespace declare.
func (st *run) declaredServiceAccounts() map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, s := range st.sources {
		ns, ok := st.namespaceFor(path.Dir(s.rel))
		if !ok {
			continue
		}
		for _, doc := range s.docs {
			if doc.Manifest != nil && doc.Manifest["apiVersion"] == "v1" && doc.Manifest["kind"] == "ServiceAccount" {
				addServiceAccount(out, ns, doc.Manifest)
			}
		}
	}
	return out
}

func addServiceAccount(sas map[string]map[string]bool, ns string, m map[string]any) {
	name, _ := mapAt(m["metadata"])["name"].(string)
	if sas[ns] == nil {
		sas[ns] = map[string]bool{}
	}
	sas[ns][name] = true
}

// policy is the pod policy of a tenant namespace, with the ServiceAccounts it declares.
func (tc *tenancyCheck) policy(ns string) PodPolicy {
	p := tc.st.cfg.PodPolicy(ns)
	p.ServiceAccounts = tc.sas[ns]
	if p.ServiceAccounts == nil {
		p.ServiceAccounts = map[string]bool{}
	}
	return p
}

// checkTenantNamespace checks, once per file of a tenant directory, the namespace that
// .gpuctl.yaml maps the directory to; a namespace that passes is recorded in st.tenants.
func (st *run) checkTenantNamespace(s *source, ns string) {
	if len(s.docs) == 0 {
		return
	}
	if rule, problem := st.cfg.namespaceProblem(ns); problem != "" {
		inner, _ := st.clusterRel(path.Dir(s.rel))
		_, i, _ := st.cfg.namespaceRule(inner)
		msg := fmt.Sprintf("the mapping %s namespaces[%d] gives %s/ the namespace %q, which is %s", keys.ConfigFile, i, path.Dir(s.rel), ns, problem)
		if rule != "" {
			msg = tenancyProblem(rule, "%s", msg)
		}
		st.ds.errorf(s.display, s.docs[0].Pos, "", "%s", msg)
		return
	}
	st.tenants[ns] = true
}

// tenantManifest holds a plain manifest of a tenant directory to the allowed kinds, the
// reserved names and the pod policy. Kinds of files below a kustomization are checked on
// what kustomize builds, since such files may be patches or generator configurations.
func (tc *tenancyCheck) tenantManifest(doc *Document, s *source, ns string) {
	u := &unstructured.Unstructured{Object: doc.Manifest}
	key := kindKey(u.GetAPIVersion(), u.GetKind())
	if !s.kustom && !tc.kinds[key] {
		tc.st.ds.errorf(doc.File, tc.fieldPos(s, doc, "kind"), "kind", "%s", tenancyProblem(ruleKinds,
			"%s is not a kind that a tenant directory (%s/) may hold", key, path.Dir(s.rel))).Hint =
			"an admin may allow a namespaced kind in tenancy.kinds of " + keys.ConfigFile
		return
	}
	if rule, field, problem := reservedUse(u, key, ns, sealedKeys(s)...); problem != "" {
		tc.st.ds.errorf(doc.File, tc.fieldPos(s, doc, field), field, "%s", tenancyProblem(rule, "%s", problem))
		return
	}
	policy := tc.policy(ns)
	for _, v := range kueueKeyViolations(u, ns, policy.AllowHighPriority) {
		tc.st.ds.errorf(doc.File, tc.fieldPos(s, doc, v.Field), v.Field, "%s", tenancyProblem(v.Rule, "%s", v.Message))
	}
	for _, v := range CheckPodPolicy(u, policy) {
		tc.st.ds.errorf(doc.File, tc.fieldPos(s, doc, v.Field), v.Field, "pod policy %s: %s", v.Rule, v.Message)
	}
}

// checkKustomizeOutput holds the objects that kustomize built in a tenant directory to the
// tenant rules (names, kinds, namespace, pod policy) and marks them as the tenant's. file is
// the kustomization file, which every error names.
func (st *run) checkKustomizeOutput(file, relDir, ns string, objs []map[string]any) {
	if rule, problem := st.cfg.namespaceProblem(ns); problem != "" {
		msg := fmt.Sprintf("%s/ is mapped to namespace %q, which is %s", relDir, ns, problem)
		if rule != "" {
			msg = tenancyProblem(rule, "%s", msg)
		}
		st.ds.errorf(file, Pos{}, "", "%s", msg)
		return
	}
	st.tenants[ns] = true
	kinds := st.cfg.tenantKinds()
	sas := st.declaredServiceAccounts()
	for _, o := range objs {
		if o["apiVersion"] == "v1" && o["kind"] == "ServiceAccount" {
			addServiceAccount(sas, ns, o)
		}
	}
	policy := (&tenancyCheck{st: st, sas: sas}).policy(ns)
	for _, o := range objs {
		if field, problem := nameProblem(o); problem != "" {
			st.ds.errorf(file, Pos{}, field, "kustomize output: %s", problem)
			continue
		}
		u := &unstructured.Unstructured{Object: o}
		key := kindKey(u.GetAPIVersion(), u.GetKind())
		rule, field, problem := reservedUse(u, key, ns, keys.Encrypted, keys.SecretRefs, keys.SpecDigest)
		switch ons := u.GetNamespace(); {
		case !kinds[key]:
			st.ds.errorf(file, Pos{}, "kind", "kustomize output %s %s: %s", u.GetKind(), u.GetName(),
				tenancyProblem(ruleKinds, "%s is not a kind that a tenant directory (%s/) may hold", key, relDir))
			continue
		case problem != "":
			st.ds.errorf(file, Pos{}, field, "kustomize output %s %s: %s", u.GetKind(), u.GetName(), tenancyProblem(rule, "%s", problem))
			continue
		case ons == "":
			u.SetNamespace(ns)
		case ons != ns:
			st.ds.errorf(file, Pos{}, "", "kustomize output %s %s/%s is outside the directory's namespace %q", u.GetKind(), ons, u.GetName(), ns)
			continue
		}
		for _, v := range kueueKeyViolations(u, ns, policy.AllowHighPriority) {
			st.ds.errorf(file, Pos{}, v.Field, "kustomize output %s: %s", object.RefOf(u).String(), tenancyProblem(v.Rule, "%s", v.Message))
		}
		for _, v := range CheckPodPolicy(u, policy) {
			st.ds.errorf(file, Pos{}, v.Field, "kustomize output %s: pod policy %s: %s", object.RefOf(u).String(), v.Rule, v.Message)
		}
		markTenant(u, ns)
	}
}

// markTenant sets the tenant annotation, whatever the file wrote.
func markTenant(u *unstructured.Unstructured, ns string) {
	ann := u.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[keys.Tenant] = ns
	u.SetAnnotations(ann)
}

// tenantRendered marks an object rendered from a gpuctl document or plain manifest of a
// tenant directory; a workload's objects are held to the pod policy too (render never makes
// them break it; this guards that promise).
func (st *run) tenantRendered(u *unstructured.Unstructured, doc *Document, ns string) {
	markTenant(u, ns)
	if doc.Workload == nil {
		return
	}
	for _, v := range CheckPodPolicy(u, st.cfg.PodPolicy(ns)) {
		st.ds.errorf(doc.File, doc.Pos, v.Field, "%s: pod policy %s: %s", object.RefOf(u).String(), v.Rule, v.Message)
	}
}

// tenantIdentities renders, for each tenant namespace, the identity that the reconciler
// impersonates there: a ServiceAccount and a RoleBinding to the tenant ClusterRole. They are
// the admin's objects (source: the configuration file), not the tenant's.
func (st *run) tenantIdentities() []runtime.Object {
	namespaces := make([]string, 0, len(st.tenants))
	for ns := range st.tenants {
		namespaces = append(namespaces, ns)
	}
	sort.Strings(namespaces)
	var out []runtime.Object
	for _, ns := range namespaces {
		meta := metav1.ObjectMeta{Name: keys.TenantServiceAccount, Namespace: ns, Labels: managedLabels(),
			Annotations: map[string]string{keys.Source: keys.ConfigFile}}
		out = append(out,
			&corev1.ServiceAccount{
				TypeMeta:                     metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
				ObjectMeta:                   meta,
				AutomountServiceAccountToken: ptr(false),
			},
			&rbacv1.RoleBinding{
				TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
				ObjectMeta: *meta.DeepCopy(),
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: keys.TenantClusterRole},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: keys.TenantServiceAccount, Namespace: ns}},
			})
	}
	return out
}

// fieldPos returns the position of a field of a manifest document (a Violation.Field path),
// or of the deepest part of that path the file writes, or the document's start. The file is
// read again, only when there is an error to place, so documents need not keep their YAML.
func (tc *tenancyCheck) fieldPos(s *source, doc *Document, field string) Pos {
	roots, ok := tc.nodes[s]
	if !ok {
		if data, err := tc.st.fsys.ReadFile(s.abs); err == nil {
			if roots, err = decodeAll(data); err != nil {
				fixed, _ := blankTabLines(data)
				roots, _ = decodeAll(fixed)
			}
		}
		tc.nodes[s] = roots
	}
	if doc.Index >= len(roots) || len(roots[doc.Index].Content) == 0 {
		return doc.Pos
	}
	n, at := roots[doc.Index].Content[0], doc.Pos
	for _, seg := range splitField(field) {
		if n = childNode(n, seg); n == nil {
			break
		}
		at = posOf(n)
	}
	return at
}

// splitField splits a field path (a.b[0].c[key.with.dots]) into its segments.
func splitField(field string) []string {
	var segs []string
	for field != "" {
		switch i := strings.IndexAny(field, ".["); {
		case i < 0:
			return append(segs, field)
		case field[i] == '.':
			if i > 0 {
				segs = append(segs, field[:i])
			}
			field = field[i+1:]
		default:
			if i > 0 {
				segs = append(segs, field[:i])
			}
			end := strings.IndexByte(field[i:], ']')
			if end < 0 {
				return append(segs, field[i+1:])
			}
			segs = append(segs, field[i+1:i+end])
			field = strings.TrimPrefix(field[i+end+1:], ".")
		}
	}
	return segs
}

// childNode returns the value of a mapping key, or a list item by index, or nil.
func childNode(n *yaml.Node, seg string) *yaml.Node {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	switch n.Kind {
	case yaml.MappingNode:
		for _, e := range (&decoder{}).entries(n) {
			if e.key.Value == seg {
				if e.value.Kind == yaml.AliasNode {
					return e.value.Alias
				}
				return e.value
			}
		}
	case yaml.SequenceNode:
		if i, err := strconv.Atoi(seg); err == nil && i >= 0 && i < len(n.Content) {
			return n.Content[i]
		}
	}
	return nil
}
