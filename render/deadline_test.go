package render_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/render"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// blockingFS blocks every ReadFile of a file whose name ends with suffix until release is closed,
// as a network filesystem or a FIFO that never answers would.
type blockingFS struct {
	filesys.FileSystem
	suffix  string
	release chan struct{}
}

func (b blockingFS) ReadFile(p string) ([]byte, error) {
	if strings.HasSuffix(p, b.suffix) {
		<-b.release
	}
	return b.FileSystem.ReadFile(p)
}

// renderWithin renders with a 200 ms deadline and fails unless it returns within a second.
func renderWithin(t *testing.T, fs filesys.FileSystem) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err := render.New(render.Options{}).RenderContext(ctx, fs, "/repo")
	if took := time.Since(start); took > time.Second {
		t.Fatalf("render took %s past a 200 ms deadline", took)
	}
	if err == nil || res != nil {
		t.Fatalf("want an error and no result, got %v, %v", res, err)
	}
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "deadline") {
		t.Fatalf("the error does not say the deadline passed: %v", err)
	}
	return err
}

// TestRenderDeadlineWhileReading: a file read that never returns ends the render at its deadline.
func TestRenderDeadlineWhileReading(t *testing.T) {
	mem, err := render.MemFS("/repo", map[string]string{"a.yaml": training, "slow.yaml": training})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	defer close(release)
	err = renderWithin(t, blockingFS{FileSystem: mem, suffix: "slow.yaml", release: release})
	if !strings.Contains(err.Error(), "slow.yaml") {
		t.Fatalf("the error does not name the file: %v", err)
	}
}

// TestRenderDeadlineInKustomize: a kustomize build that never returns (a generator file that
// blocks) ends the render at its deadline, naming the kustomization.
func TestRenderDeadlineInKustomize(t *testing.T) {
	mem, err := render.MemFS("/repo", map[string]string{
		"app/kustomization.yaml": "configMapGenerator:\n  - name: x\n    files: [data.txt]\n",
		"app/data.txt":           "hello\n",
	})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	defer close(release)
	err = renderWithin(t, blockingFS{FileSystem: mem, suffix: "data.txt", release: release})
	if !strings.Contains(err.Error(), "building the kustomization /repo/app/kustomization.yaml") {
		t.Fatalf("the error does not name the kustomization: %v", err)
	}
}

// TestRenderCanceledBeforeStart: an ended context renders nothing.
func TestRenderCanceledBeforeStart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	mem, _ := render.MemFS("/repo", map[string]string{"a.yaml": training})
	if _, err := render.New(render.Options{}).RenderContext(ctx, mem, "/repo"); !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
}
