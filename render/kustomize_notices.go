package render

import (
	"bufio"
	"io"
	"log"
	"os"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/types"
)

// kustomize writes to the process's standard error on its own: its deprecation notices with
// fmt.Fprintf(os.Stderr, ...) (KustTarget.Load, once per kustomization loaded, so once per
// overlay that builds a base), and a few notes through the standard log package (unused vars,
// sort order). A render reports the deprecations as warnings with file:line instead
// (deprecatedFields). While any kustomize build runs, os.Stderr and the standard logger are
// redirected through a filter that drops kustomize's notices and passes every other line on
// to where it was going, so that other goroutines lose nothing. Renders run in parallel: the
// first build to start redirects, the last to end restores (unless someone else replaced
// os.Stderr meanwhile, which is then left alone).
var kustomizeStderr stderrFilter

// stderrFilter is the redirection of os.Stderr and the standard logger during kustomize builds.
type stderrFilter struct {
	mu      sync.Mutex
	active  int           // builds running
	stderr  *os.File      // where other lines written to os.Stderr go
	w       *os.File      // the write end of the pipe installed as os.Stderr; nil if none
	drained chan struct{} // closed when the pipe is read to its end
	logf    *logFilter    // installed as the standard logger's output
}

// begin redirects (or joins the redirection of a build already running) and returns the
// function that ends it.
func (f *stderrFilter) begin() (end func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.active == 0 {
		f.logf = &logFilter{next: log.Writer()}
		log.SetOutput(f.logf)
		if r, w, err := os.Pipe(); err == nil {
			f.stderr, f.w, f.drained = os.Stderr, w, make(chan struct{})
			os.Stderr = w
			go f.pump(r, f.drained)
		}
	} else if f.w != nil && os.Stderr != f.w { // replaced meanwhile: filter the new one
		f.stderr, os.Stderr = os.Stderr, f.w
	}
	f.active++
	var once sync.Once
	return func() { once.Do(f.end) }
}

// end ends one build's redirection; the last one restores and waits for the pipe to drain.
func (f *stderrFilter) end() {
	f.mu.Lock()
	if f.active--; f.active > 0 {
		f.mu.Unlock()
		return
	}
	if log.Writer() == io.Writer(f.logf) {
		log.SetOutput(f.logf.next)
	}
	w, drained := f.w, f.drained
	if w != nil && os.Stderr == w {
		os.Stderr = f.stderr
	}
	f.w = nil
	f.mu.Unlock()
	if w != nil {
		_ = w.Close()
		<-drained
	}
}

// busy reports whether a build is redirecting now.
func (f *stderrFilter) busy() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.active > 0
}

// pump passes the lines written to the pipe on, except kustomize's notices.
func (f *stderrFilter) pump(r *os.File, drained chan struct{}) {
	defer close(drained)
	defer r.Close()
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if line != "" && !kustomizeNotice(line) {
			f.mu.Lock()
			out := f.stderr
			f.mu.Unlock()
			_, _ = io.WriteString(out, line)
		}
		if err != nil {
			return
		}
	}
}

// logFilter is the standard logger's output during builds: the log package writes each entry
// in one call.
type logFilter struct {
	next io.Writer
}

// Write passes an entry on unless it is one of kustomize's notes.
func (l *logFilter) Write(p []byte) (int, error) {
	if kustomizeNotice(string(p)) {
		return len(p), nil
	}
	return l.next.Write(p)
}

// kustomizeNotices are the starts (after the log package's prefix) of what kustomize writes
// to stderr or the standard logger while building a local kustomization.
var kustomizeNotices = []string{
	"# Warning: '", // deprecated fields (reported as warnings)
	"well-defined vars that were never replaced:", // vars (deprecated; reported as such)
	"MakePrimitiveReplacer: bad replacement type",
	"Warning: Sorting order is set both in 'kustomization.yaml'",
}

// kustomizeNotice reports whether a line is one of kustomize's notices.
func kustomizeNotice(line string) bool {
	for _, n := range kustomizeNotices {
		if strings.Contains(line, n) {
			return true
		}
	}
	return false
}

// deprecatedField is a kustomization field that kustomize deprecates, and its replacement.
type deprecatedField struct {
	field, use string
	set        func(*types.Kustomization) bool
}

// deprecatedFields are the fields of kustomize's CheckDeprecatedFields.
//
//nolint:staticcheck // the deprecated fields are what this is about
var deprecatedFields = []deprecatedField{
	{"bases", "resources", func(k *types.Kustomization) bool { return k.Bases != nil }},
	{"commonLabels", "labels", func(k *types.Kustomization) bool { return k.CommonLabels != nil }},
	{"imageTags", "images", func(k *types.Kustomization) bool { return k.ImageTags != nil }},
	{"patchesJson6902", "patches", func(k *types.Kustomization) bool { return k.PatchesJson6902 != nil }},
	{"patchesStrategicMerge", "patches", func(k *types.Kustomization) bool { return k.PatchesStrategicMerge != nil }},
	{"vars", "replacements", func(k *types.Kustomization) bool { return k.Vars != nil }},
}

// warnDeprecated reports each deprecated field of a kustomization as a warning at the field's
// line, in place of the notice kustomize prints on stderr.
func (st *run) warnDeprecated(c *kcheck, kz *types.Kustomization) {
	for _, d := range deprecatedFields {
		if !d.set(kz) {
			continue
		}
		st.ds.warnf(c.file, topKeyPos(c.doc, d.field), d.field, "deprecated by kustomize: use %s", d.use).Hint =
			"kustomize edit fix rewrites the kustomization"
	}
}

// topKeyPos returns the position of a top-level key of a YAML document, matched without regard
// to case as kustomize reads keys, or the zero Pos.
func topKeyPos(doc *yaml.Node, key string) Pos {
	n := doc
	if n != nil && n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	if n == nil || n.Kind != yaml.MappingNode {
		return Pos{}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if strings.EqualFold(n.Content[i].Value, key) {
			return posOf(n.Content[i])
		}
	}
	return Pos{}
}
