package httpapi

import (
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes/fake"
)

func writeTokens(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestParseTokens(t *testing.T) {
	entries, err := parseTokens("tokens.csv", []byte(
		"# comment\n\n  tok1 , alice \ntok2,ops,admin\ntok3,bob,ADMIN\n"+
			"tok4,ml,namespaces=alice; ml-infra;alice\ntok5,board, namespaces=*\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Principal{{Name: "alice"}, {Name: "ops", Admin: true}, {Name: "bob", Admin: true},
		{Name: "ml", Namespaces: []string{"alice", "ml-infra"}}, {Name: "board", AllNamespaces: true}}
	if len(entries) != len(want) {
		t.Fatalf("%d entries", len(entries))
	}
	for i, e := range entries {
		if !reflect.DeepEqual(e.principal, want[i]) {
			t.Errorf("entry %d: %+v, want %+v", i, e.principal, want[i])
		}
	}

	_, err = parseTokens("tokens.csv", []byte("ok,alice\nlonely\n,nobody\nt,n,root\nok,again\nt w,x\na,b,c,d\n"+
		"u,n,namespaces=\nv,n,namespaces=a;B_c\nw,n,alice;bob\n"))
	for _, want := range []string{"tokens.csv:2:", "tokens.csv:3: empty", `tokens.csv:4: third field "root"`,
		"tokens.csv:5: token repeated (first on line 1)", "tokens.csv:6: token contains white space", "tokens.csv:7:",
		`tokens.csv:8: namespaces: "" is not a namespace name`, `tokens.csv:9: namespaces: "B_c" is not`,
		`tokens.csv:10: third field "alice;bob"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
}

func TestStaticTokensReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.csv")
	writeTokens(t, path, "first,alice\n")
	tokens, err := LoadStaticTokens(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := tokens.Lookup("first"); !ok || p.Name != "alice" || p.Admin {
		t.Fatalf("first: %+v %v", p, ok)
	}
	if _, ok := tokens.Lookup("second"); ok {
		t.Fatal("unknown token accepted")
	}

	// Rotate: a new file (as a Secret volume swaps its symlink).
	next := path + ".new"
	writeTokens(t, next, "second,ops,admin\n")
	if err := os.Rename(next, path); err != nil {
		t.Fatal(err)
	}
	if _, ok := tokens.Lookup("first"); ok {
		t.Error("revoked token still accepted")
	}
	if p, ok := tokens.Lookup("second"); !ok || !p.Admin {
		t.Errorf("second: %+v %v", p, ok)
	}

	// In place, same size, new modification time.
	writeTokens(t, path, "thirdd,ops,admin\n")
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	if _, ok := tokens.Lookup("thirdd"); !ok {
		t.Error("rewritten file not reloaded")
	}

	// An invalid file refuses everything until it is fixed.
	writeTokens(t, path, "thirdd,ops,superuser\n")
	if _, ok := tokens.Lookup("thirdd"); ok {
		t.Error("token of an invalid file accepted")
	}
	writeTokens(t, path, "fixed,ops\n")
	if _, ok := tokens.Lookup("fixed"); !ok {
		t.Error("fixed file not reloaded")
	}

	// A missing file refuses everything.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, ok := tokens.Lookup("fixed"); ok {
		t.Error("token accepted without a file")
	}
	writeTokens(t, path, "back,ops\n")
	if _, ok := tokens.Lookup("back"); !ok {
		t.Error("restored file not read")
	}
}

func TestNilStaticTokens(t *testing.T) {
	var tokens *StaticTokens
	if _, ok := tokens.Lookup(""); ok {
		t.Error("nil StaticTokens accepted a token")
	}
}

func TestLoadStaticTokensErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadStaticTokens(filepath.Join(dir, "missing"), nil); err == nil {
		t.Error("missing file accepted")
	}
	path := filepath.Join(dir, "bad.csv")
	writeTokens(t, path, "justatoken\n")
	if _, err := LoadStaticTokens(path, nil); err == nil || !strings.Contains(err.Error(), "bad.csv:1:") {
		t.Errorf("bad file: %v", err)
	}
}

func TestStaticTokensServeAPI(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.csv")
	writeTokens(t, path, "u-token,alice\na-token,ops,admin\n")
	tokens, err := LoadStaticTokens(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := New(Options{Backend: &fakeBackend{}, Kube: fake.NewClientset(), Tokens: tokens,
		Registry: prometheus.NewRegistry()})
	if w := do(t, h, http.MethodGet, "/api/v1/jobs", "u-token"); w.Code != http.StatusOK {
		t.Errorf("user list: %d %s", w.Code, w.Body)
	}
	wantError(t, do(t, h, http.MethodPost, "/api/v1/sync", "u-token"), http.StatusForbidden)
	if w := do(t, h, http.MethodPost, "/api/v1/sync", "a-token"); w.Code != http.StatusAccepted {
		t.Errorf("admin sync: %d %s", w.Code, w.Body)
	}
}

// A token never appears in the errors of a token file.
func TestParseTokensHidesTokens(t *testing.T) {
	_, err := parseTokens("tokens.csv", []byte("SECRET1,n,root\nSECRET1,m\nSECRET2 x,n\nSECRET3,n,namespaces=Bad\nSECRET4\n"))
	if err == nil || strings.Contains(err.Error(), "SECRET") {
		t.Errorf("error %v", err)
	}
}
