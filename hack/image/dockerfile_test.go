package main

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// stage is one FROM of a Dockerfile and the instructions under it, continuation lines joined.
type stage struct {
	From, Name string
	// Instr are the instructions after FROM: {"USER", "65532:65532"}.
	Instr [][2]string
}

// stages are a Dockerfile's stages by name.
type stages map[string]stage

// all returns the arguments of every instruction named op in stage name and the stages it is
// built FROM, the first stage's first.
func (ss stages) all(name, op string) []string {
	s := ss[name]
	var out []string
	if _, ok := ss[s.From]; ok && s.From != name {
		out = ss.all(s.From, op)
	}
	for _, in := range s.Instr {
		if in[0] == op {
			out = append(out, in[1])
		}
	}
	return out
}

// base is the image a stage is built on, through the stages it is built FROM.
func (ss stages) base(name string) string {
	from := ss[name].From
	if _, ok := ss[from]; ok && from != name {
		return ss.base(from)
	}
	return from
}

// parseDockerfile reads the stages of a Dockerfile: enough of its syntax for the checks below.
func parseDockerfile(t *testing.T, path string) (args map[string]string, ss stages) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	args, ss = map[string]string{}, stages{}
	var cur *stage
	text := strings.ReplaceAll(string(b), "\\\n", " ")
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		op, rest, _ := strings.Cut(line, " ")
		op = strings.ToUpper(op)
		rest = strings.Join(strings.Fields(rest), " ")
		switch {
		case op == "FROM":
			f := strings.Fields(rest)
			if len(f) > 0 && strings.HasPrefix(f[0], "--platform=") {
				f = f[1:]
			}
			if len(f) != 3 || !strings.EqualFold(f[1], "AS") {
				t.Fatalf("%s: FROM %s: want FROM IMAGE AS NAME", path, rest)
			}
			if cur != nil {
				ss[cur.Name] = *cur
			}
			cur = &stage{From: f[0], Name: f[2]}
		case cur == nil && op == "ARG":
			k, v, _ := strings.Cut(rest, "=")
			args[k] = v
		case cur != nil:
			cur.Instr = append(cur.Instr, [2]string{op, rest})
		}
	}
	if cur != nil {
		ss[cur.Name] = *cur
	}
	return args, ss
}

// TestDockerfileMatchesImages checks that each target of the Dockerfile is make image's image:
// the same entrypoint, user, working directory, ports and labels, a base of the same kind, and
// a binary built with the same flags and the Go of go.mod.
func TestDockerfileMatchesImages(t *testing.T) {
	root := filepath.Join("..", "..")
	args, ss := parseDockerfile(t, filepath.Join(root, "Dockerfile"))
	cfg, err := LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod); m == nil || args["GO_VERSION"] != string(m[1]) {
		t.Errorf("ARG GO_VERSION=%s, want go.mod's %s", args["GO_VERSION"], m)
	}
	for _, s := range cfg.Specs {
		t.Run(s.Name, func(t *testing.T) {
			if _, ok := ss[s.Name]; !ok {
				t.Fatalf("no target %s; stages %v", s.Name, slices.Sorted(maps.Keys(ss)))
			}
			wantBase := "gcr.io/distroless/static-debian12:nonroot"
			if s.Cgo {
				wantBase = "gcr.io/distroless/base-nossl-debian12:nonroot"
			}
			if b := ss.base(s.Name); b != wantBase {
				t.Errorf("FROM %s, want %s", b, wantBase)
			}
			var entry []string
			if e := ss.all(s.Name, "ENTRYPOINT"); len(e) != 1 || json.Unmarshal([]byte(e[0]), &entry) != nil {
				t.Fatalf("ENTRYPOINT %q: want one, in JSON form", e)
			}
			if want := []string{BinDir + "/" + s.Name}; !slices.Equal(entry, want) {
				t.Errorf("ENTRYPOINT %q, want %q", entry, want)
			}
			if u := ss.all(s.Name, "USER"); !slices.Equal(u, []string{User}) {
				t.Errorf("USER %q, want %s", u, User)
			}
			if w := ss.all(s.Name, "WORKDIR"); !slices.Equal(w, []string{WorkingDir}) {
				t.Errorf("WORKDIR %q, want %s", w, WorkingDir)
			}
			if e := ss.all(s.Name, "ENV"); !slices.Equal(e, []string{"SSL_CERT_FILE=" + CABundle}) {
				t.Errorf("ENV %q, want SSL_CERT_FILE=%s", e, CABundle)
			}
			if p := ss.all(s.Name, "EXPOSE"); !slices.Equal(p, s.Ports) {
				t.Errorf("EXPOSE %q, want %q", p, s.Ports)
			}
			labels := map[string]string{}
			for _, l := range ss.all(s.Name, "LABEL") {
				for _, kv := range strings.Fields(l) {
					k, v, _ := strings.Cut(kv, "=")
					labels[k] = v
				}
			}
			want := map[string]string{LabelSource: cfg.Source, LabelRevision: "${REVISION}", LabelVersion: "${VERSION}", LabelCreated: "${CREATED}"}
			if !maps.Equal(labels, want) {
				t.Errorf("LABEL %v, want %v", labels, want)
			}
			build := "build-" + s.Name
			if c := ss.all(s.Name, "COPY"); !slices.Equal(c, []string{"--from=" + build + " /out/" + s.Name + " " + BinDir + "/" + s.Name}) {
				t.Errorf("COPY %q: want the binary of %s at %s/%s", c, build, BinDir, s.Name)
			}
			run := strings.Join(ss.all(build, "RUN"), "\n")
			wantRun := []string{"go build -trimpath", "-X " + VersionVar + "=${VERSION}", "./" + strings.TrimPrefix(s.Package, "./")}
			if s.Cgo {
				wantRun = append(wantRun, "CGO_ENABLED=1", `CGO_CFLAGS="`+cgoCFlags+`"`, `CGO_LDFLAGS="`+cgoLDFlags+`"`, cgoExtLDArg)
			} else {
				wantRun = append(wantRun, "CGO_ENABLED=0", "GOARCH=$TARGETARCH")
			}
			for _, w := range wantRun {
				if !strings.Contains(run, w) {
					t.Errorf("stage %s builds without %q:\n%s", build, w, run)
				}
			}
		})
	}
}
