package nodelabeler_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/nodelabeler"
	"github.com/gpuctl/gpuctl/nodelabeler/nvmlinfo"
)

// withMemory sets the total memory every GPU of s reports, as a real card does (a little
// under its marketed size).
func withMemory(s *server.Server, mib uint64) *server.Server {
	for _, d := range s.Devices {
		d.(*server.Device).MemoryInfo.Total = mib << 20
	}
	return s
}

func TestLabelsOverMocks(t *testing.T) {
	type testCase struct {
		nvml *server.Server
		want map[string]string
	}
	common := map[string]string{keys.DriverVersion: "550.54.15", keys.CUDAVersion: "12.4"}
	with := func(m map[string]string) map[string]string {
		out := maps.Clone(common)
		maps.Copy(out, m)
		return out
	}
	tests := map[string]testCase{
		"8 x A100-40GB (dgxa100)": {
			nvml: dgxa100.New(),
			want: with(map[string]string{keys.GPUType: "a100-40g", keys.GPUProduct: "Mock-NVIDIA-A100-SXM4-40GB",
				keys.GPUCount: "8", keys.GPUMemory: "40960", keys.GPUFamily: "ampere"}),
		},
		"8 x A100-80GB, real memory size": {
			nvml: withMemory(dgxa100.NewWithGPUs(gpus.Multiple(8, gpus.A100_SXM4_80GB)...), 81559),
			want: with(map[string]string{keys.GPUType: "a100-80g", keys.GPUProduct: "NVIDIA-A100-SXM4-80GB",
				keys.GPUCount: "8", keys.GPUMemory: "81559", keys.GPUFamily: "ampere"}),
		},
		"8 x H100 (dgxh100)": {
			nvml: dgxh100.New(),
			want: with(map[string]string{keys.GPUType: "h100-80g", keys.GPUProduct: "NVIDIA-H100-80GB-HBM3",
				keys.GPUCount: "8", keys.GPUMemory: "81920", keys.GPUFamily: "hopper"}),
		},
		"mixed: most numerous model wins": {
			nvml: dgxa100.NewWithGPUs(gpus.H100_SXM5_80GB, gpus.A100_SXM4_80GB, gpus.A100_SXM4_80GB, gpus.H100_SXM5_80GB, gpus.A100_SXM4_80GB),
			want: with(map[string]string{keys.GPUType: "a100-80g", keys.GPUProduct: "NVIDIA-A100-SXM4-80GB",
				keys.GPUCount: "3", keys.GPUMemory: "81920", keys.GPUFamily: "ampere", keys.GPUTypesMixed: "true"}),
		},
		"mixed tie: smaller gpu-type wins": {
			nvml: dgxa100.NewWithGPUs(gpus.H100_SXM5_80GB, gpus.A100_SXM4_40GB, gpus.H100_SXM5_80GB, gpus.A100_SXM4_40GB),
			want: with(map[string]string{keys.GPUType: "a100-40g", keys.GPUProduct: "Mock-NVIDIA-A100-SXM4-40GB",
				keys.GPUCount: "2", keys.GPUMemory: "40960", keys.GPUFamily: "ampere", keys.GPUTypesMixed: "true"}),
		},
		"same model, two memory sizes, is mixed": {
			nvml: dgxa100.NewWithGPUs(gpus.A100_PCIE_40GB, gpus.A100_PCIE_80GB),
			want: with(map[string]string{keys.GPUType: "a100-40g", keys.GPUProduct: "NVIDIA-A100-PCIE-40GB",
				keys.GPUCount: "1", keys.GPUMemory: "40960", keys.GPUFamily: "ampere", keys.GPUTypesMixed: "true"}),
		},
		"MIG: reported, type from the whole GPU": {
			nvml: func() *server.Server {
				s := dgxh100.New()
				for _, d := range s.Devices[:2] {
					d.SetMigMode(nvml.DEVICE_MIG_ENABLE)
				}
				return s
			}(),
			want: with(map[string]string{keys.GPUType: "h100-80g", keys.GPUProduct: "NVIDIA-H100-80GB-HBM3",
				keys.GPUCount: "8", keys.GPUMemory: "81920", keys.GPUFamily: "hopper", nodelabeler.MIGEnabled: "true"}),
		},
		"no GPUs": {
			nvml: dgxa100.NewWithGPUs(),
			want: map[string]string{keys.GPUCount: "0"},
		},
		"GetMemoryInfo fails on every GPU: size from the name, no gpu-memory": {
			nvml: func() *server.Server {
				s := dgxh100.New()
				for _, d := range s.Devices {
					d.(*server.Device).GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) { return nvml.Memory{}, nvml.ERROR_NO_PERMISSION }
				}
				return s
			}(),
			want: with(map[string]string{keys.GPUType: "h100-80g", keys.GPUProduct: "NVIDIA-H100-80GB-HBM3",
				keys.GPUCount: "8", keys.GPUFamily: "hopper"}),
		},
		"GetMemoryInfo fails on one GPU: still counted with its model": {
			nvml: func() *server.Server {
				s := withMemory(dgxa100.NewWithGPUs(gpus.Multiple(8, gpus.A100_SXM4_80GB)...), 81559)
				s.Devices[6].(*server.Device).GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) { return nvml.Memory{}, nvml.ERROR_UNKNOWN }
				return s
			}(),
			want: with(map[string]string{keys.GPUType: "a100-80g", keys.GPUProduct: "NVIDIA-A100-SXM4-80GB",
				keys.GPUCount: "8", keys.GPUMemory: "81559", keys.GPUFamily: "ampere"}),
		},
		"driver and CUDA versions unknown": {
			nvml: func() *server.Server {
				s := dgxh100.New()
				s.SystemGetDriverVersionFunc = func() (string, nvml.Return) { return "", nvml.ERROR_UNKNOWN }
				s.SystemGetCudaDriverVersionFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_UNKNOWN }
				return s
			}(),
			want: map[string]string{keys.GPUType: "h100-80g", keys.GPUProduct: "NVIDIA-H100-80GB-HBM3",
				keys.GPUCount: "8", keys.GPUMemory: "81920", keys.GPUFamily: "hopper"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			inv, err := nvmlinfo.Discover(tc.nvml)
			if err != nil {
				t.Fatal(err)
			}
			got := nodelabeler.Labels(inv)
			if !maps.Equal(got, tc.want) {
				t.Errorf("labels\n got %v\nwant %v", got, tc.want)
			}
			checkLabels(t, got)
		})
	}
}

func checkLabels(t *testing.T, l map[string]string) {
	t.Helper()
	for k, v := range l {
		if !strings.HasPrefix(k, keys.Prefix) {
			t.Errorf("label %s: not under %s", k, keys.Prefix)
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			t.Errorf("label %s=%q: %v", k, v, errs)
		}
	}
}

func TestGPUType(t *testing.T) {
	tests := map[string]struct {
		name string
		mib  uint64
		want string
	}{
		"A100 80GB SXM":        {"NVIDIA A100-SXM4-80GB", 81920, "a100-80g"},
		"A100 40GB real":       {"NVIDIA A100-SXM4-40GB", 40536, "a100-40g"},
		"H100 SXM real":        {"NVIDIA H100 80GB HBM3", 81559, "h100-80g"},
		"H100 PCIe":            {"NVIDIA H100 PCIe", 81559, "h100-80g"},
		"H100 NVL":             {"NVIDIA H100 NVL", 95830, "h100-94g"},
		"H200":                 {"NVIDIA H200", 143771, "h200-141g"},
		"B200":                 {"NVIDIA B200", 183359, "b200-180g"},
		"T4":                   {"Tesla T4", 15360, "t4-16g"},
		"V100":                 {"Tesla V100-SXM2-16GB", 16160, "v100-16g"},
		"A10G":                 {"NVIDIA A10G", 23028, "a10g-24g"},
		"L40S":                 {"NVIDIA L40S", 46068, "l40s-48g"},
		"RTX 4090":             {"NVIDIA GeForce RTX 4090", 24564, "rtx4090-24g"},
		"RTX A6000":            {"NVIDIA RTX A6000", 49140, "rtxa6000-48g"},
		"mock prefix":          {"Mock NVIDIA A100-SXM4-40GB", 40960, "a100-40g"},
		"memory unknown, name": {"NVIDIA A100-SXM4-80GB", 0, "a100-80g"},
		"memory unknown":       {"NVIDIA L4", 0, "l4"},
		"huge":                 {"NVIDIA X9000", 600 * 1024, "x9000-600g"},
		"odd characters":       {"NVIDIA Foo/Bar 1000 (rev b)", 8192, "foo-bar1000-8g"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := nodelabeler.GPUType(tc.name, tc.mib); got != tc.want {
				t.Errorf("GPUType(%q, %d) = %q, want %q", tc.name, tc.mib, got, tc.want)
			}
		})
	}
}

func TestProduct(t *testing.T) {
	tests := map[string]string{
		"NVIDIA A100-SXM4-80GB":        "NVIDIA-A100-SXM4-80GB",
		"NVIDIA H100 80GB HBM3":        "NVIDIA-H100-80GB-HBM3",
		"  NVIDIA  GeForce RTX 4090  ": "NVIDIA-GeForce-RTX-4090",
		"NVIDIA Foo/Bar (rev. b)":      "NVIDIA-Foo-Bar-rev.-b",
		strings.Repeat("NVIDIA ", 12):  "NVIDIA-NVIDIA-NVIDIA-NVIDIA-NVIDIA-NVIDIA-NVIDIA-NVIDIA-NVIDIA",
	}
	for in, want := range tests {
		got := nodelabeler.Product(in)
		if got != want {
			t.Errorf("Product(%q) = %q, want %q", in, got, want)
		}
		if errs := validation.IsValidLabelValue(got); len(errs) > 0 || len(got) > 63 {
			t.Errorf("Product(%q) = %q: %v", in, got, errs)
		}
	}
}

func TestFamily(t *testing.T) {
	tests := map[[2]int]string{
		{7, 0}: "volta", {7, 5}: "turing", {8, 0}: "ampere", {8, 6}: "ampere", {8, 7}: "ampere",
		{8, 9}: "ada-lovelace", {9, 0}: "hopper", {10, 0}: "blackwell", {10, 3}: "blackwell",
		{12, 0}: "blackwell", {6, 1}: "unknown", {11, 0}: "unknown", {-1, -1}: "unknown", {7, 15}: "unknown",
	}
	for cc, want := range tests {
		if got := nodelabeler.Family(cc[0], cc[1]); got != want {
			t.Errorf("Family(%d.%d) = %q, want %q", cc[0], cc[1], got, want)
		}
	}
}

func TestCUDAVersion(t *testing.T) {
	tests := map[int]string{12040: "12.4", 12000: "12.0", 11080: "11.8", 13010: "13.1", 0: "", -1: ""}
	for in, want := range tests {
		if got := nodelabeler.CUDAVersion(in); got != want {
			t.Errorf("CUDAVersion(%d) = %q, want %q", in, got, want)
		}
	}
}
