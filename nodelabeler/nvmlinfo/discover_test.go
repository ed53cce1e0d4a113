package nvmlinfo_test

import (
	"errors"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/gpuctl/gpuctl/nodelabeler/nvmlinfo"
)

func TestDiscoverDGXA100(t *testing.T) {
	inv, err := nvmlinfo.Discover(dgxa100.New())
	if err != nil {
		t.Fatal(err)
	}
	if inv.DriverVersion != "550.54.15" || inv.CUDADriverVersion != 12040 || len(inv.Warnings) != 0 {
		t.Errorf("inventory = %+v", inv)
	}
	if len(inv.GPUs) != 8 {
		t.Fatalf("%d GPUs, want 8", len(inv.GPUs))
	}
	for i, g := range inv.GPUs {
		want := nvmlinfo.GPU{Index: i, Name: "Mock NVIDIA A100-SXM4-40GB", MemoryMiB: 40960, CCMajor: 8, CCMinor: 0}
		if g != want {
			t.Errorf("gpu %d = %+v, want %+v", i, g, want)
		}
	}
}

func TestDiscoverMIG(t *testing.T) {
	s := dgxh100.New()
	s.Devices[3].(*server.Device).MigMode = nvml.DEVICE_MIG_ENABLE
	inv, err := nvmlinfo.Discover(s)
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range inv.GPUs {
		if g.MIGEnabled != (i == 3) {
			t.Errorf("gpu %d: MIGEnabled = %v", i, g.MIGEnabled)
		}
		if g.MemoryMiB != 81920 || g.Name != "NVIDIA H100 80GB HBM3" {
			t.Errorf("gpu %d = %+v: a MIG GPU is described whole", i, g)
		}
	}
}

func TestDiscoverMIGNotSupportedIsNoWarning(t *testing.T) {
	s := dgxa100.New()
	for _, d := range s.Devices {
		d.(*server.Device).GetMigModeFunc = func() (int, int, nvml.Return) { return 0, 0, nvml.ERROR_NOT_SUPPORTED }
	}
	inv, err := nvmlinfo.Discover(s)
	if err != nil || len(inv.Warnings) != 0 {
		t.Fatalf("err = %v, warnings = %v", err, inv.Warnings)
	}
}

func TestDiscoverInitFailure(t *testing.T) {
	s := dgxa100.New()
	s.InitFunc = func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }
	s.ShutdownFunc = func() nvml.Return { t.Error("Shutdown after a failed Init"); return nvml.SUCCESS }
	_, err := nvmlinfo.Discover(s)
	var u *nvmlinfo.UnavailableError
	if !errors.As(err, &u) || u.Return != nvml.ERROR_LIBRARY_NOT_FOUND {
		t.Fatalf("err = %v, want an UnavailableError", err)
	}
}

func TestDiscoverMemoryInfoFailure(t *testing.T) {
	s := dgxa100.New()
	s.Devices[5].(*server.Device).GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) { return nvml.Memory{}, nvml.ERROR_UNKNOWN }
	inv, err := nvmlinfo.Discover(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(inv.GPUs) != 8 || inv.GPUs[5].MemoryMiB != 0 || inv.GPUs[4].MemoryMiB != 40960 {
		t.Errorf("gpus = %+v", inv.GPUs)
	}
	if len(inv.Warnings) != 1 || !errors.Is(inv.Warnings[0], nvml.ERROR_UNKNOWN) {
		t.Errorf("warnings = %v", inv.Warnings)
	}
}

func TestDiscoverFailures(t *testing.T) {
	tests := map[string]func(s *server.Server){
		"device count": func(s *server.Server) {
			s.DeviceGetCountFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_GPU_IS_LOST }
		},
		"handle": func(s *server.Server) {
			s.DeviceGetHandleByIndexFunc = func(int) (nvml.Device, nvml.Return) { return nil, nvml.ERROR_GPU_IS_LOST }
		},
		"name": func(s *server.Server) {
			s.Devices[0].(*server.Device).GetNameFunc = func() (string, nvml.Return) { return "", nvml.ERROR_GPU_IS_LOST }
		},
	}
	for name, breakIt := range tests {
		t.Run(name, func(t *testing.T) {
			s := dgxa100.New()
			shutdowns := 0
			s.ShutdownFunc = func() nvml.Return { shutdowns++; return nvml.SUCCESS }
			breakIt(s)
			_, err := nvmlinfo.Discover(s)
			var u *nvmlinfo.UnavailableError
			if !errors.Is(err, nvml.ERROR_GPU_IS_LOST) || errors.As(err, &u) {
				t.Errorf("err = %v, want a discovery error wrapping ERROR_GPU_IS_LOST", err)
			}
			if shutdowns != 1 {
				t.Errorf("%d shutdowns, want 1", shutdowns)
			}
		})
	}
}

func TestOpen(t *testing.T) {
	for _, src := range []string{"real", "mock:dgxa100", "mock:dgxh100"} {
		if _, err := nvmlinfo.Open(src); err != nil {
			t.Errorf("Open(%q): %v", src, err)
		}
	}
	if _, err := nvmlinfo.Open("mock:dgx1"); err == nil {
		t.Error("Open(mock:dgx1) succeeded")
	}
}

// TestOpenRealWithoutDriver runs on machines without the NVIDIA driver (like CI): Init fails
// and Discover says NVML is unavailable instead of crashing. On a GPU machine it finds GPUs.
func TestOpenRealWithoutDriver(t *testing.T) {
	lib, _ := nvmlinfo.Open("real")
	inv, err := nvmlinfo.Discover(lib)
	var u *nvmlinfo.UnavailableError
	switch {
	case errors.As(err, &u):
		t.Logf("no driver here: %v", err)
	case err != nil:
		t.Fatal(err)
	default:
		t.Logf("real NVML: %d GPUs", len(inv.GPUs))
	}
}
