package render

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// The rules of the tenant pod policy (docs/tenancy.md), each of which the admission policy
// must name in a message.
var podPolicyRules = []string{RuleHostNamespaces, RulePrivileged, RuleCapabilities, RuleHostPath, RuleHostPorts,
	RuleHostProbes, RuleAppArmor, RuleSELinux, RuleProcMount, RuleSeccomp, RuleSysctls, RuleHostProcess, RuleNodeName,
	RuleTolerations, RulePriorityClass, RuleServiceAccount, RuleExternalIPs, RuleVolumeName,
	RuleVolumeTypes, RuleExternalName, RuleGPUDevices, RuleIngressSnippets, RuleOwnerReferences, RuleSchedulingGates, RuleManagedBy}

func policyObjects(t *testing.T, cfg *Config, tenants ...string) (*admissionv1.ValidatingAdmissionPolicy, *admissionv1.ValidatingAdmissionPolicyBinding) {
	t.Helper()
	objs := AdmissionPolicy(cfg, tenants)
	if len(objs) != 2 {
		t.Fatalf("%d objects, want a policy and a binding", len(objs))
	}
	var p admissionv1.ValidatingAdmissionPolicy
	var b admissionv1.ValidatingAdmissionPolicyBinding
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(objs[0].Object, &p); err != nil {
		t.Fatal(err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(objs[1].Object, &b); err != nil {
		t.Fatal(err)
	}
	return &p, &b
}

func TestAdmissionPolicyOff(t *testing.T) {
	off := false
	cases := map[string]struct {
		cfg     *Config
		tenants []string
	}{
		"no tenant namespaces":        {cfg: &Config{}},
		"tenancy.admission: false":    {cfg: &Config{Tenancy: Tenancy{Admission: &off}}, tenants: []string{"alice"}},
		"no configuration, no tenant": {},
	}
	for name, c := range cases {
		if objs := AdmissionPolicy(c.cfg, c.tenants); len(objs) != 0 {
			t.Errorf("%s: %d objects, want none", name, len(objs))
		}
	}
	on := true
	if objs := AdmissionPolicy(&Config{Tenancy: Tenancy{Admission: &on}}, []string{"alice"}); len(objs) != 2 {
		t.Errorf("tenancy.admission: true: %d objects, want 2", len(objs))
	}
}

// TestAdmissionPolicyScope: the binding denies, in exactly the tenant namespaces (sorted, each
// once), every create and update of the kinds that make pods, Services and claims; both are
// the admin's objects, from the configuration file.
func TestAdmissionPolicyScope(t *testing.T) {
	p, b := policyObjects(t, nil, "bob", "alice", "bob")
	if p.Name != keys.PodPolicyName || b.Name != keys.PodPolicyName || b.Spec.PolicyName != keys.PodPolicyName {
		t.Errorf("names %q, %q, policyName %q", p.Name, b.Name, b.Spec.PolicyName)
	}
	if p.Annotations[keys.Source] != keys.ConfigFile || b.Annotations[keys.Source] != keys.ConfigFile {
		t.Errorf("sources %q, %q: want the configuration file", p.Annotations[keys.Source], b.Annotations[keys.Source])
	}
	if !slices.Equal(b.Spec.ValidationActions, []admissionv1.ValidationAction{admissionv1.Deny}) {
		t.Errorf("validationActions %v", b.Spec.ValidationActions)
	}
	sel := b.Spec.MatchResources.NamespaceSelector
	if len(sel.MatchExpressions) != 1 || sel.MatchExpressions[0].Key != "kubernetes.io/metadata.name" ||
		sel.MatchExpressions[0].Operator != "In" || !slices.Equal(sel.MatchExpressions[0].Values, []string{"alice", "bob"}) {
		t.Errorf("namespaceSelector %+v", sel)
	}
	if p.Spec.FailurePolicy == nil || *p.Spec.FailurePolicy != admissionv1.Fail {
		t.Error("failurePolicy is not Fail")
	}
	got := map[string]bool{}
	for _, r := range p.Spec.MatchConstraints.ResourceRules {
		if !slices.Equal(r.Operations, []admissionv1.OperationType{admissionv1.Create, admissionv1.Update}) {
			t.Errorf("%v: operations %v", r.Resources, r.Operations)
		}
		for _, res := range r.Resources {
			got[r.APIGroups[0]+"/"+res] = true
		}
	}
	for _, want := range []string{"/pods", "/pods/ephemeralcontainers", "/replicationcontrollers", "/services", "/persistentvolumeclaims",
		"apps/deployments", "apps/statefulsets", "apps/replicasets", "apps/daemonsets", "batch/jobs", "batch/cronjobs"} {
		if !got[want] {
			t.Errorf("resource %s is not matched (matched: %v)", want, got)
		}
	}
}

// TestAdmissionPolicyRuleNames: every rule of the pod policy has a validation whose messages
// start with "pod policy <rule>:", and no validation names another.
func TestAdmissionPolicyRuleNames(t *testing.T) {
	p, _ := policyObjects(t, nil, "alice")
	named := map[string]bool{}
	re := regexp.MustCompile(`^'?"?pod policy ([a-z-]+): `)
	for _, v := range p.Spec.Validations {
		m := re.FindStringSubmatch(v.Message)
		if m == nil {
			t.Errorf("validation %q: message %q does not name its rule", v.Expression, v.Message)
			continue
		}
		if v.MessageExpression != "" {
			if me := re.FindStringSubmatch(v.MessageExpression); me == nil || me[1] != m[1] {
				t.Errorf("rule %s: messageExpression %q names another rule", m[1], v.MessageExpression)
			}
		}
		if strings.Contains(v.Message, "\n") {
			t.Errorf("rule %s: message has a line break", m[1])
		}
		named[m[1]] = true
	}
	for _, r := range podPolicyRules {
		if !named[r] {
			t.Errorf("no validation for rule %s", r)
		}
		delete(named, r)
	}
	if len(named) > 0 {
		t.Errorf("validations of unknown rules: %v", named)
	}
}

// TestAdmissionPolicyConfig: the admin's host-path prefixes, writable prefixes and
// high-priority namespaces are what the CEL checks, quoted as CEL strings.
func TestAdmissionPolicyConfig(t *testing.T) {
	expr := func(p *admissionv1.ValidatingAdmissionPolicy, variable string) string {
		for _, v := range p.Spec.Variables {
			if v.Name == variable {
				return v.Expression
			}
		}
		t.Fatalf("no variable %s", variable)
		return ""
	}
	priority := func(p *admissionv1.ValidatingAdmissionPolicy) string {
		for _, v := range p.Spec.Validations {
			if strings.Contains(v.Message, "priority-class") {
				return v.Expression
			}
		}
		t.Fatal("no priority-class validation")
		return ""
	}
	def, _ := policyObjects(t, nil, "alice")
	for _, pre := range DefaultHostPathPrefixes() {
		if !strings.Contains(expr(def, "hostPathsOutside"), `"`+pre+`/"`) {
			t.Errorf("default prefix %s missing from %s", pre, expr(def, "hostPathsOutside"))
		}
	}
	if ro := expr(def, "readOnlyHostPaths"); !strings.Contains(ro, `"/output/"`) || !strings.Contains(ro, `"/cache/"`) || strings.Contains(ro, "/datasets") {
		t.Errorf("readOnlyHostPaths %s: want the default writable prefixes only", ro)
	}
	if !strings.Contains(priority(def), `== "gpuctl-high" && true)`) {
		t.Errorf("without highPriorityNamespaces every tenant may use gpuctl-high: %s", priority(def))
	}

	cfg := &Config{HostPathPrefixes: []string{"/scratch", `/we"ird`}, WritableHostPathPrefixes: []string{"/scratch/out"},
		Tenancy: Tenancy{HighPriorityNamespaces: []string{"bob", "alice"}}}
	p, _ := policyObjects(t, cfg, "alice", "bob")
	out := expr(p, "hostPathsOutside")
	if !strings.Contains(out, `v.hostPath.path.startsWith("/scratch/")`) || !strings.Contains(out, `v.hostPath.path == "/we\"ird"`) || strings.Contains(out, "/datasets") {
		t.Errorf("hostPathsOutside %s", out)
	}
	if ro := expr(p, "readOnlyHostPaths"); !strings.Contains(ro, `"/scratch/out/"`) || strings.Contains(ro, "/output") {
		t.Errorf("readOnlyHostPaths %s", ro)
	}
	if !strings.Contains(priority(p), `request.namespace in ["alice", "bob"]`) {
		t.Errorf("priority-class %s: want gpuctl-high in alice and bob only", priority(p))
	}
}

// TestAdmissionPolicyRendered: a render run with tenant namespaces emits the policy and its
// binding once, labelled as gpuctl's, byte-identical whatever the order of the tenant set.
func TestAdmissionPolicyRendered(t *testing.T) {
	renderYAML := func() string {
		st := &run{cfg: &Config{}, ds: &diagnostics{},
			tenants: map[string]bool{"team-c": true, "alice": true, "bob": true}}
		var b strings.Builder
		for _, o := range st.build() {
			if o.GetLabels()[keys.ManagedBy] != keys.ManagedByValue {
				t.Errorf("%s is not labelled %s", object.RefOf(o).String(), keys.ManagedBy)
			}
			y, err := yaml.Marshal(o.Object)
			if err != nil {
				t.Fatal(err)
			}
			b.WriteString("---\n" + string(y))
		}
		if st.ds.hasErrors() {
			t.Errorf("diagnostics %v", st.ds.sorted())
		}
		return b.String()
	}
	first := renderYAML()
	if n := strings.Count(first, "\nkind: ValidatingAdmissionPolicy\n"); n != 1 {
		t.Errorf("%d policies", n)
	}
	if n := strings.Count(first, "\nkind: ValidatingAdmissionPolicyBinding\n"); n != 1 {
		t.Errorf("%d bindings", n)
	}
	if !strings.Contains(first, "values:\n        - alice\n        - bob\n        - team-c\n") {
		t.Errorf("binding does not select alice, bob, team-c in order:\n%s", first)
	}
	for range 5 {
		if again := renderYAML(); again != first {
			t.Fatal("two renders of the same tenants differ")
		}
	}
}
