package nvmlinfo

import (
	"fmt"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
)

// Library is the part of NVML that discovery uses. nvml.Interface satisfies it, and so do
// go-nvml's mock servers.
type Library interface {
	Init() nvml.Return
	Shutdown() nvml.Return
	SystemGetDriverVersion() (string, nvml.Return)
	SystemGetCudaDriverVersion() (int, nvml.Return)
	DeviceGetCount() (int, nvml.Return)
	DeviceGetHandleByIndex(index int) (nvml.Device, nvml.Return)
}

// Device is the part of an NVML device handle that discovery uses.
type Device interface {
	GetName() (string, nvml.Return)
	GetMemoryInfo() (nvml.Memory, nvml.Return)
	GetCudaComputeCapability() (int, int, nvml.Return)
	GetMigMode() (int, int, nvml.Return)
}

// Sources accepted by [Open].
const (
	SourceReal         = "real"
	SourceMockDGXA100  = "mock:dgxa100"
	SourceMockDGXH100  = "mock:dgxh100"
	sourcesDescription = SourceReal + ", " + SourceMockDGXA100 + " or " + SourceMockDGXH100
)

// Open returns the NVML library named by source: "real" (libnvidia-ml.so.1 of the host
// driver, loaded by Init), "mock:dgxa100" (8 × A100-SXM4-40GB) or "mock:dgxh100"
// (8 × H100 80GB HBM3), go-nvml's mock servers for demos and tests.
func Open(source string) (Library, error) {
	switch strings.TrimSpace(source) {
	case SourceReal:
		return nvml.New(), nil
	case SourceMockDGXA100:
		return dgxa100.New(), nil
	case SourceMockDGXH100:
		return dgxh100.New(), nil
	}
	return nil, fmt.Errorf("nvml source %q: expected %s", source, sourcesDescription)
}
