package nodelabeler_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/nodelabeler"
	"github.com/gpuctl/gpuctl/nodelabeler/nvmlinfo"
)

// fakeNodes is a one-node API that does what server-side apply does to labels: the applied
// set replaces what the manager applied before; other labels stay.
type fakeNodes struct {
	node    corev1.Node
	owned   []string
	applies int
}

func newFakeNodes(name string, labels map[string]string) *fakeNodes {
	return &fakeNodes{node: corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}}
}

func (f *fakeNodes) Get(_ context.Context, name string, _ metav1.GetOptions) (*corev1.Node, error) {
	if name != f.node.Name {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "nodes"}, name)
	}
	n := f.node.DeepCopy()
	fields := map[string]any{}
	for _, k := range f.owned {
		fields["f:"+k] = map[string]any{}
	}
	raw, _ := json.Marshal(map[string]any{"f:metadata": map[string]any{"f:labels": fields}})
	n.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: keys.NodeLabelerFieldManager,
		Operation: metav1.ManagedFieldsOperationApply, FieldsV1: &metav1.FieldsV1{Raw: raw}}}
	return n, nil
}

func (f *fakeNodes) Apply(_ context.Context, ac *corev1ac.NodeApplyConfiguration, opts metav1.ApplyOptions) (*corev1.Node, error) {
	if opts.FieldManager != keys.NodeLabelerFieldManager || !opts.Force || *ac.Name != f.node.Name {
		panic("unexpected apply")
	}
	f.applies++
	for _, k := range f.owned {
		delete(f.node.Labels, k)
	}
	if f.node.Labels == nil {
		f.node.Labels = map[string]string{}
	}
	maps.Copy(f.node.Labels, ac.Labels)
	f.owned = slices.Sorted(maps.Keys(ac.Labels))
	return f.node.DeepCopy(), nil
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestPassPublishesAndRemovesStaleLabels(t *testing.T) {
	nodes := newFakeNodes("n", map[string]string{"type": "kwok", keys.Pool: "train"})
	l := &nodelabeler.Labeler{NVML: dgxa100.New(), Nodes: nodes, Node: "n", Log: quietLog()}
	res, err := l.Pass(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != nodelabeler.OutcomeConfigured || nodes.node.Labels[keys.GPUType] != "a100-40g" || len(res.Set) != 7 {
		t.Errorf("first pass: %+v, labels %v", res, nodes.node.Labels)
	}
	res, err = l.Pass(context.Background())
	if err != nil || res.Outcome != nodelabeler.OutcomeUnchanged || nodes.applies != 1 {
		t.Errorf("second pass: %+v, %v, %d applies", res, err, nodes.applies)
	}
	mig := dgxh100.New()
	mig.Devices[0].SetMigMode(nvml.DEVICE_MIG_ENABLE)
	l.NVML = mig
	if res, err = l.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if nodes.node.Labels[keys.GPUType] != "h100-80g" || nodes.node.Labels[nodelabeler.MIGEnabled] != "true" {
		t.Errorf("h100 with MIG: %v", nodes.node.Labels)
	}
	l.NVML = dgxh100.New()
	if res, err = l.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Removed, []string{nodelabeler.MIGEnabled}) || len(res.Set) != 0 {
		t.Errorf("MIG turned off: %+v", res)
	}
	if nodes.node.Labels["type"] != "kwok" || nodes.node.Labels[keys.Pool] != "train" {
		t.Errorf("labels of others touched: %v", nodes.node.Labels)
	}
}

// TestPassNoDriverThenDriver: without NVML the node gets gpu-count=0 alone; NVML is retried
// on every pass, so a driver that shows up later is found (no latching).
func TestPassNoDriverThenDriver(t *testing.T) {
	s := dgxh100.New()
	s.InitFunc = func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }
	nodes := newFakeNodes("n", map[string]string{"type": "kwok"})
	l := &nodelabeler.Labeler{NVML: s, Nodes: nodes, Node: "n", Log: quietLog()}
	for range 2 {
		if _, err := l.Pass(context.Background()); err != nil {
			t.Fatal(err)
		}
		if want := map[string]string{"type": "kwok", keys.GPUCount: "0"}; !maps.Equal(nodes.node.Labels, want) {
			t.Fatalf("no driver: labels %v, want %v", nodes.node.Labels, want)
		}
	}
	s.InitFunc = func() nvml.Return { return nvml.SUCCESS }
	if _, err := l.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if nodes.node.Labels[keys.GPUCount] != "8" || nodes.node.Labels[keys.GPUType] != "h100-80g" {
		t.Errorf("driver back: labels %v", nodes.node.Labels)
	}
}

// TestPassDiscoveryErrorKeepsLabels: a failure after Init applies nothing.
func TestPassDiscoveryErrorKeepsLabels(t *testing.T) {
	s := dgxa100.New()
	nodes := newFakeNodes("n", nil)
	l := &nodelabeler.Labeler{NVML: s, Nodes: nodes, Node: "n", Log: quietLog()}
	if _, err := l.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.DeviceGetCountFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_GPU_IS_LOST }
	if _, err := l.Pass(context.Background()); err == nil {
		t.Fatal("pass succeeded")
	}
	if nodes.applies != 1 || nodes.node.Labels[keys.GPUCount] != "8" {
		t.Errorf("%d applies, labels %v", nodes.applies, nodes.node.Labels)
	}
}

func TestPassMissingNode(t *testing.T) {
	l := &nodelabeler.Labeler{NVML: dgxa100.New(), Nodes: newFakeNodes("other", nil), Node: "n", Log: quietLog()}
	if _, err := l.Pass(context.Background()); !apierrors.IsNotFound(err) {
		t.Errorf("err = %v, want NotFound", err)
	}
}

// TestRunKeepsGoing: Run survives failing passes and returns when its context ends.
func TestRunKeepsGoing(t *testing.T) {
	s := dgxa100.New()
	inits := 0
	s.InitFunc = func() nvml.Return { inits++; return nvml.ERROR_DRIVER_NOT_LOADED }
	l := &nodelabeler.Labeler{NVML: s, Nodes: newFakeNodes("other", nil), Node: "n", Log: quietLog()}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := l.Run(ctx, 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if inits < 3 {
		t.Errorf("%d NVML inits in 100ms at a 10ms interval", inits)
	}
}

func TestOptionsValidate(t *testing.T) {
	o := nodelabeler.Options{Interval: time.Minute}
	if o.Validate() == nil {
		t.Error("no node name accepted")
	}
	o.NodeName = "n"
	if err := o.Validate(); err != nil {
		t.Error(err)
	}
	o.Interval = 0
	if o.Validate() == nil {
		t.Error("zero interval accepted")
	}
	o.Oneshot = true
	if err := o.Validate(); err != nil {
		t.Error(err)
	}
	dry := nodelabeler.Options{DryRun: true}
	if err := dry.Validate(); err != nil {
		t.Errorf("--dry-run without a node name: %v", err)
	}
}

// dryRunLines are the labels of go-nvml's mocks, as --dry-run prints them.
var dryRunLines = map[string]string{
	"mock:dgxa100": `g8s.host/cuda-version=12.4
g8s.host/driver-version=550.54.15
g8s.host/gpu-count=8
g8s.host/gpu-family=ampere
g8s.host/gpu-memory=40960
g8s.host/gpu-product=Mock-NVIDIA-A100-SXM4-40GB
g8s.host/gpu-type=a100-40g
`,
	"mock:dgxh100": `g8s.host/cuda-version=12.4
g8s.host/driver-version=550.54.15
g8s.host/gpu-count=8
g8s.host/gpu-family=hopper
g8s.host/gpu-memory=81920
g8s.host/gpu-product=NVIDIA-H100-80GB-HBM3
g8s.host/gpu-type=h100-80g
`,
}

// TestDryRun: --dry-run prints exactly the labels a pass publishes, sorted key=value lines,
// and an NVML that cannot start is an error that says so, with nothing printed.
func TestDryRun(t *testing.T) {
	for source, want := range dryRunLines {
		lib, err := nvmlinfo.Open(source)
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		if err := nodelabeler.DryRun(lib, &out, quietLog()); err != nil {
			t.Fatalf("%s: %v", source, err)
		}
		if out.String() != want {
			t.Errorf("%s: printed\n%s\nwant\n%s", source, out.String(), want)
		}
	}
	mig := dgxh100.New()
	mig.Devices[0].SetMigMode(nvml.DEVICE_MIG_ENABLE)
	var out strings.Builder
	if err := nodelabeler.DryRun(mig, &out, quietLog()); err != nil {
		t.Fatal(err)
	}
	if want := dryRunLines["mock:dgxh100"] + nodelabeler.MIGEnabled + "=true\n"; out.String() != want {
		t.Errorf("MIG on: printed\n%s\nwant\n%s", out.String(), want)
	}
	s := dgxh100.New()
	s.InitFunc = func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }
	out.Reset()
	err := nodelabeler.DryRun(s, &out, quietLog())
	var unavailable *nvmlinfo.UnavailableError
	if !errors.As(err, &unavailable) || !strings.Contains(err.Error(), "libnvidia-ml.so.1 not found") ||
		!strings.Contains(err.Error(), keys.GPUCount+"=0") || strings.Contains(err.Error(), "\n") || out.Len() != 0 {
		t.Errorf("no driver: err %v, printed %q", err, out.String())
	}
}
