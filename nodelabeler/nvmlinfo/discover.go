package nvmlinfo

import (
	"errors"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Inventory is what NVML says about a node.
type Inventory struct {
	// DriverVersion is the driver version, e.g. 550.54.15; empty if NVML did not say.
	DriverVersion string
	// CUDADriverVersion is nvmlSystemGetCudaDriverVersion, e.g. 12040; 0 if NVML did not say.
	CUDADriverVersion int
	// GPUs are the physical GPUs in index order. MIG devices are never listed: a GPU in MIG
	// mode is listed once, with MIGEnabled set.
	GPUs []GPU
	// Warnings are the NVML calls that failed without failing discovery, in order.
	Warnings []error
}

// GPU is one physical GPU.
type GPU struct {
	Index int
	// Name is the NVML product name, e.g. "NVIDIA A100-SXM4-80GB".
	Name string
	// MemoryMiB is the total memory in MiB; 0 when NVML could not tell.
	MemoryMiB uint64
	// CCMajor and CCMinor are the CUDA compute capability; both -1 when NVML could not tell.
	CCMajor, CCMinor int
	// MIGEnabled is true when the GPU's current MIG mode is enabled.
	MIGEnabled bool
}

// UnavailableError says that NVML could not be initialised: no driver, no libnvidia-ml.so.1,
// a driver/library mismatch or no permission. A node in that state has no usable GPU.
type UnavailableError struct {
	Return nvml.Return
}

// Error implements error.
func (e *UnavailableError) Error() string {
	if e.Return == nvml.ERROR_LIBRARY_NOT_FOUND {
		return "nvml: init: libnvidia-ml.so.1 not found (no NVIDIA driver on this host, or not mounted into the container)"
	}
	return fmt.Sprintf("nvml: init: %v", e.Return)
}

// Discover initialises NVML, lists the node's GPUs and shuts NVML down again, so that every
// call starts afresh: a driver that appears later is found on the next call. An init failure
// is an *UnavailableError; any other error means discovery could not finish and the caller
// should keep what it published before.
func Discover(lib Library) (inv Inventory, err error) {
	if ret := lib.Init(); ret != nvml.SUCCESS {
		return Inventory{}, &UnavailableError{Return: ret}
	}
	defer func() {
		if ret := lib.Shutdown(); ret != nvml.SUCCESS && err == nil {
			inv.Warnings = append(inv.Warnings, fmt.Errorf("nvml: shutdown: %w", ret))
		}
	}()
	if v, ret := lib.SystemGetDriverVersion(); ret == nvml.SUCCESS {
		inv.DriverVersion = v
	} else {
		inv.Warnings = append(inv.Warnings, fmt.Errorf("nvml: driver version: %w", ret))
	}
	if v, ret := lib.SystemGetCudaDriverVersion(); ret == nvml.SUCCESS {
		inv.CUDADriverVersion = v
	} else {
		inv.Warnings = append(inv.Warnings, fmt.Errorf("nvml: cuda driver version: %w", ret))
	}
	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return Inventory{}, fmt.Errorf("nvml: device count: %w", ret)
	}
	for i := range n {
		h, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return Inventory{}, fmt.Errorf("nvml: gpu %d: handle: %w", i, ret)
		}
		gpu, warnings, err := describe(i, h)
		if err != nil {
			return Inventory{}, err
		}
		inv.GPUs = append(inv.GPUs, gpu)
		inv.Warnings = append(inv.Warnings, warnings...)
	}
	return inv, nil
}

// describe reads one GPU. Its name is required; memory, compute capability and MIG mode are
// left unknown (with a warning) when NVML cannot tell.
func describe(i int, d Device) (GPU, []error, error) {
	gpu := GPU{Index: i, CCMajor: -1, CCMinor: -1}
	name, ret := d.GetName()
	if ret != nvml.SUCCESS {
		return GPU{}, nil, fmt.Errorf("nvml: gpu %d: name: %w", i, ret)
	}
	gpu.Name = name
	var warnings []error
	if mem, ret := d.GetMemoryInfo(); ret == nvml.SUCCESS {
		gpu.MemoryMiB = mem.Total / (1 << 20)
	} else {
		warnings = append(warnings, fmt.Errorf("nvml: gpu %d (%s): memory info: %w", i, name, ret))
	}
	if major, minor, ret := d.GetCudaComputeCapability(); ret == nvml.SUCCESS {
		gpu.CCMajor, gpu.CCMinor = major, minor
	} else {
		warnings = append(warnings, fmt.Errorf("nvml: gpu %d (%s): compute capability: %w", i, name, ret))
	}
	switch current, _, ret := d.GetMigMode(); {
	case ret == nvml.SUCCESS:
		gpu.MIGEnabled = current == nvml.DEVICE_MIG_ENABLE
	case errors.Is(ret, nvml.ERROR_NOT_SUPPORTED):
		// GPUs without MIG (anything before Ampere's A100/A30) say so; not a warning.
	default:
		warnings = append(warnings, fmt.Errorf("nvml: gpu %d (%s): mig mode: %w", i, name, ret))
	}
	return gpu, warnings, nil
}
