package render

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
)

// A workload refers to Secrets of its namespace by name (docs/format.md §3.4): one key as a
// variable (environment.env[].secret), every key as variables (environment.envFrom), or every
// key as a file (storage.secrets). Render never reads the cluster, so it cannot know whether
// such a Secret exists: it records each reference, with the line of the file that makes it,
// in the annotation keys.SecretRefs of the workload's object. The engine (reconciler) takes
// the annotation off before anything is hashed or applied, and fails the workload whose
// Secret no desired object declares and the cluster does not hold.

// reservedMountPaths are the container paths at or below which no Secret is mounted: the
// runtime's own (/dev, gpuctl's /dev/shm among them, /proc, /sys) and the ServiceAccount
// token's.
var reservedMountPaths = []string{"/dev", "/proc", "/sys", "/var/run/secrets/kubernetes.io"}

// secretVolumePrefix names the volume of storage.secrets[i]: secret-{i}.
const secretVolumePrefix = "secret-"

// SecretRef is a workload's reference to a Secret of its namespace, as render records it.
type SecretRef struct {
	// Secret is the name of the Secret.
	Secret string `json:"secret"`
	// Line is the line of the workload's file (annotation keys.Source) that names it.
	Line int `json:"line"`
	// Field is the field that names it, e.g. environment.env[0].secret.name.
	Field string `json:"field"`
}

// TakeSecretRefs returns the Secret references that render recorded on a workload object and
// removes their annotation from it (in place): it is the engine's, and never applied. An
// object without the annotation gives none.
func TakeSecretRefs(u *unstructured.Unstructured) ([]SecretRef, error) {
	md, _ := u.Object["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	v, ok := ann[keys.SecretRefs].(string)
	if !ok {
		return nil, nil
	}
	delete(ann, keys.SecretRefs)
	if len(ann) == 0 {
		delete(md, "annotations")
	}
	var refs []SecretRef
	if err := json.Unmarshal([]byte(v), &refs); err != nil {
		return nil, fmt.Errorf("annotation %s: %w", keys.SecretRefs, err)
	}
	return refs, nil
}

// secretRefs lists the workload's references to Secrets (not imagePullSecret, which a pod
// does without), each at the field that names the Secret.
func (w workloadInput) secretRefs() []SecretRef {
	var out []SecretRef
	add := func(name, field string) {
		out = append(out, SecretRef{Secret: name, Line: w.doc.At(field).Line, Field: field})
	}
	for i, e := range w.Environment.Env {
		if e.Secret != nil {
			add(e.Secret.Name, fmt.Sprintf("environment.env[%d].secret.name", i))
		}
	}
	for i, e := range w.Environment.EnvFrom {
		add(e.Secret, fmt.Sprintf("environment.envFrom[%d].secret", i))
	}
	for i, s := range w.Storage.Secrets {
		add(s.Name, fmt.Sprintf("storage.secrets[%d].name", i))
	}
	return out
}

// recordSecretRefs annotates the workload's objects that run pods (not its Services) with
// its Secret references (keys.SecretRefs).
func (w workloadInput) recordSecretRefs(objs []runtime.Object) {
	refs := w.secretRefs()
	if len(refs) == 0 {
		return
	}
	b, err := json.Marshal(refs)
	if err != nil {
		panic("render: Secret references have no JSON form: " + err.Error()) // plain data: never
	}
	for _, o := range objs {
		if _, svc := o.(*corev1.Service); svc {
			continue
		}
		m, err := meta.Accessor(o)
		if err != nil {
			panic(fmt.Sprintf("render: a workload object without metadata: %T", o)) // built here: never
		}
		ann := m.GetAnnotations()
		ann[keys.SecretRefs] = string(b)
		m.SetAnnotations(ann)
	}
}

// userEnv is one variable of environment.env in the container.
func userEnv(e EnvVar) corev1.EnvVar {
	if e.Secret == nil {
		return corev1.EnvVar{Name: e.Name, Value: e.Value}
	}
	return corev1.EnvVar{Name: e.Name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: e.Secret.Name}, Key: e.Secret.Key}}}
}

// envFrom is environment.envFrom in the container.
func (w workloadInput) envFrom() []corev1.EnvFromSource {
	var out []corev1.EnvFromSource
	for _, e := range w.Environment.EnvFrom {
		out = append(out, corev1.EnvFromSource{Prefix: e.Prefix,
			SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: e.Secret}}})
	}
	return out
}

// addSecretVolumes mounts storage.secrets read-only: volume secret-{i} at its path.
func (w workloadInput) addSecretVolumes(spec *corev1.PodSpec) {
	c := &spec.Containers[0]
	for i, s := range w.Storage.Secrets {
		name := secretVolumePrefix + strconv.Itoa(i)
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: name,
			VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: s.Name}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: name, MountPath: trimSlash(s.Path), ReadOnly: true})
	}
}

// secretRefs checks the workload's references to Secrets (docs/format.md §3.4).
func (v *validator) secretRefs(w *Workload) {
	for i, e := range w.Environment.Env {
		base := fmt.Sprintf("environment.env[%d]", i)
		if e.Secret == nil {
			continue
		}
		if v.doc.Has(base + ".value") {
			v.errorf(base+".secret", "set value or secret, not both").Hint = "secret: {name, key} takes the variable's value from a key of a Secret"
		}
		v.secretName(base+".secret.name", e.Secret.Name)
		if k := e.Secret.Key; k != "" {
			if errs := validation.IsConfigMapKey(k); len(errs) > 0 {
				v.errorf(base+".secret.key", "%q is not a valid Secret key: %s", k, errs[0])
			}
		}
	}
	seen := map[string]int{}
	for i, e := range w.Environment.EnvFrom {
		base := fmt.Sprintf("environment.envFrom[%d]", i)
		v.secretName(base+".secret", e.Secret)
		if e.Prefix != "" {
			if errs := validation.IsEnvVarName(e.Prefix); len(errs) > 0 {
				v.errorf(base+".prefix", "invalid prefix %q: %s", e.Prefix, errs[0]).Hint = "the prefix starts the name of each variable"
			}
		}
		if e.Secret == "" {
			continue
		}
		k := e.Secret + "\x00" + e.Prefix
		if j, dup := seen[k]; dup {
			v.errorf(base+".secret", "Secret %q is listed twice (also envFrom[%d])", e.Secret, j)
		}
		seen[k] = i
	}
	v.secretMounts(w.Storage)
}

// secretMounts checks storage.secrets: names, and paths that are absolute, clean, not
// reserved, and mounted once (workdirs included).
func (v *validator) secretMounts(s Storage) {
	mounted := map[string]string{}
	for i, wd := range s.Workdirs {
		mounted[trimSlash(wd.Path)] = fmt.Sprintf("workdirs[%d]", i)
	}
	for i, m := range s.Secrets {
		base := fmt.Sprintf("storage.secrets[%d]", i)
		v.secretName(base+".name", m.Name)
		field := base + ".path"
		if m.Path == "" || !v.cleanAbsolute(field, m.Path) {
			continue
		}
		p := trimSlash(m.Path)
		switch {
		case p == "/":
			v.errorf(field, "a Secret cannot be mounted at /")
			continue
		case underAny(p, reservedMountPaths):
			v.errorf(field, "%q is reserved: a Secret is not mounted at or below %s", m.Path, strings.Join(reservedMountPaths, ", "))
			continue
		}
		if other, dup := mounted[p]; dup {
			v.errorf(field, "%q is mounted twice (also %s)", m.Path, other)
		}
		mounted[p] = fmt.Sprintf("secrets[%d]", i)
	}
}

// secretName reports an error unless s is a Secret name (a DNS-1123 subdomain); "" is
// reported as a missing field by the decoder.
func (v *validator) secretName(field, s string) {
	if s == "" {
		return
	}
	if errs := validation.IsDNS1123Subdomain(s); len(errs) > 0 {
		v.errorf(field, "%q is not a valid Secret name: %s", s, errs[0]).Hint =
			"use lower-case letters, digits, '-' and '.', starting and ending with a letter or digit"
	}
}

// checkSecretKeys reports each environment.env[].secret of a rendered workload whose Secret a
// file of the render declares (in the workload's namespace) without that key: its pods would
// never start (CreateContainerConfigError). Only the keys' names are read.
func (st *run) checkSecretKeys(objs []*unstructured.Unstructured, origins map[*unstructured.Unstructured]origin) {
	declared := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		if o.GetAPIVersion() == "v1" && o.GetKind() == "Secret" {
			declared[namespaceOf(o)+"/"+o.GetName()] = o
		}
	}
	if len(declared) == 0 {
		return
	}
	rendered := map[*Document]bool{}
	for _, org := range origins {
		rendered[org.doc] = true
	}
	for _, s := range st.sources {
		for _, doc := range s.docs {
			if doc.Workload == nil || !rendered[doc] {
				continue
			}
			for i, e := range doc.Workload.Environment.Env {
				if e.Secret == nil {
					continue
				}
				secret := declared[doc.Namespace+"/"+e.Secret.Name]
				if secret == nil {
					continue
				}
				have := secretKeys(secret)
				if slices.Contains(have, e.Secret.Key) {
					continue
				}
				field := fmt.Sprintf("environment.env[%d].secret.key", i)
				d := st.ds.errorf(doc.File, doc.At(field), field, "Secret %q (%s) has no key %q: the pods would not start",
					e.Secret.Name, object.AnnotationOf(secret, keys.Source), e.Secret.Key)
				d.Hint = "its keys: " + strings.Join(have, ", ")
				if len(have) == 0 {
					d.Hint = "it has no keys"
				}
			}
		}
	}
}

// secretKeys are the names of the keys of a Secret's data and stringData, sorted.
func secretKeys(u *unstructured.Unstructured) []string {
	var out []string
	for _, f := range []string{"data", "stringData"} {
		m, _ := u.Object[f].(map[string]any)
		for k := range m {
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	slices.Sort(out)
	return out
}
