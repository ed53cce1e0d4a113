package nodelabeler

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/nodelabeler/nvmlinfo"
)

// MIGEnabled is keys.MIGEnabled: "true" on nodes where at least one GPU is in MIG mode; such a
// node's gpu-type describes the whole GPU, never a slice.
const MIGEnabled = keys.MIGEnabled

// Families by compute capability (major*10 + minor), and by major version alone.
var (
	familyByCC = map[int]string{
		70: "volta", 72: "volta", 75: "turing",
		80: "ampere", 86: "ampere", 87: "ampere", 89: "ada-lovelace",
		90: "hopper",
	}
	familyByMajor = map[int]string{10: "blackwell", 12: "blackwell"}
)

// FamilyUnknown is the gpu-family of compute capabilities with no known family.
const FamilyUnknown = "unknown"

// Family returns the architecture family of a compute capability: 7.0 volta, 7.5 turing,
// 8.0/8.6/8.7 ampere, 8.9 ada-lovelace, 9.0 hopper, 10.x and 12.x blackwell, else unknown.
func Family(major, minor int) string {
	if f, ok := familyByCC[major*10+minor]; ok && minor < 10 {
		return f
	}
	if f, ok := familyByMajor[major]; ok {
		return f
	}
	return FamilyUnknown
}

// CUDAVersion formats nvmlSystemGetCudaDriverVersion (1000*major + 10*minor), e.g. 12040 as
// "12.4"; "" for 0 or less.
func CUDAVersion(v int) string {
	if v <= 0 {
		return ""
	}
	return fmt.Sprintf("%d.%d", v/1000, v%1000/10)
}

// marketedGiB are the memory sizes GPUs are sold with. A GPU reports a little less than its
// marketed size (an 80 GB H100 reports 81559 MiB, a 16 GB T4 15360 MiB, a 141 GB H200
// 143771 MiB), so the size is the smallest marketed one that is at least what it reports.
var marketedGiB = []uint64{1, 2, 3, 4, 5, 6, 8, 10, 11, 12, 16, 20, 24, 32, 40, 48, 64, 80, 94, 96, 128, 141, 144, 180, 188, 192, 256, 288}

// MarketedGiB rounds a reported memory size in MiB to the marketed size in GiB; 0 for 0.
// Sizes above the largest known one are rounded up to a whole GiB.
func MarketedGiB(mib uint64) uint64 {
	if mib == 0 {
		return 0
	}
	// Half a GiB of slack, so that a card reporting a hair over its size keeps it.
	gib := (float64(mib) - 512) / 1024
	for _, s := range marketedGiB {
		if float64(s) >= gib {
			return s
		}
	}
	return uint64(math.Ceil(float64(mib) / 1024))
}

// vendorWords are dropped from product names before the model is picked.
var vendorWords = map[string]bool{"mock": true, "nvidia": true, "tesla": true, "geforce": true, "quadro": true}

// sizeInName matches a marketed size written in a product name, e.g. 80GB.
var sizeInName = regexp.MustCompile(`^(\d+)GB$`)

// Model returns the GPU model of an NVML product name, lower case: the words up to the first
// one with a digit, after dropping vendor words, joined without separators. "NVIDIA
// A100-SXM4-80GB" gives a100, "NVIDIA H100 80GB HBM3" h100, "Tesla T4" t4, "NVIDIA GeForce
// RTX 4090" rtx4090. It also returns the size written in the name (80 for 80GB), or 0.
func Model(name string) (model string, sizeGiB uint64) {
	words := strings.FieldsFunc(name, func(r rune) bool { return r == ' ' || r == '-' || r == '_' })
	var parts []string
	for _, w := range words {
		if m := sizeInName.FindStringSubmatch(strings.ToUpper(w)); m != nil && sizeGiB == 0 {
			sizeGiB, _ = strconv.ParseUint(m[1], 10, 64)
			continue
		}
		if model != "" || vendorWords[strings.ToLower(w)] {
			continue
		}
		parts = append(parts, strings.ToLower(w))
		if strings.ContainsAny(w, "0123456789") {
			model = strings.Join(parts, "")
		}
	}
	if model == "" {
		model = strings.Join(parts, "")
	}
	return sanitize(model, "-"), sizeGiB
}

// GPUType returns the g8s.host/gpu-type of a GPU: its model and its marketed memory size,
// e.g. a100-80g. When NVML could not say the memory size, the size written in the name is
// used, and without one the type is the model alone.
func GPUType(name string, memoryMiB uint64) string {
	model, named := Model(name)
	size := MarketedGiB(memoryMiB)
	if size == 0 {
		size = named
	}
	if size == 0 {
		return truncate(model)
	}
	return truncate(fmt.Sprintf("%s-%dg", model, size))
}

// invalidLabelChars are the characters a label value cannot hold.
var invalidLabelChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// Product returns a product name as a valid label value: runs of other characters become
// "-", the value starts and ends with an alphanumeric and has at most 63 characters. "NVIDIA
// A100-SXM4-80GB" gives NVIDIA-A100-SXM4-80GB.
func Product(name string) string {
	return truncate(sanitize(name, "-"))
}

func sanitize(s, sep string) string {
	return strings.Trim(invalidLabelChars.ReplaceAllString(s, sep), "-_.")
}

// truncate cuts a label value to 63 characters, ending on an alphanumeric.
func truncate(s string) string {
	if len(s) > 63 {
		s = s[:63]
	}
	return strings.TrimRight(s, "-_.")
}

// NoGPULabels are the labels of a node where NVML cannot be initialised: gpu-count=0 and no
// other GPU label, so a node whose driver went away stops attracting GPU work.
func NoGPULabels() map[string]string {
	return map[string]string{keys.GPUCount: "0"}
}

// Labels returns the labels that describe inv. On a node with several GPU models, the labels
// describe the most numerous model (ties: the smaller gpu-type, then product name), gpu-count
// counts only GPUs of that model, and gpu-types-mixed is "true". A node without GPUs gets
// gpu-count=0 alone.
func Labels(inv nvmlinfo.Inventory) map[string]string {
	if len(inv.GPUs) == 0 {
		return NoGPULabels()
	}
	chosen, count, models := choose(inv.GPUs)
	l := map[string]string{
		keys.GPUType:    GPUType(chosen.Name, chosen.MemoryMiB),
		keys.GPUProduct: Product(chosen.Name),
		keys.GPUCount:   strconv.Itoa(count),
		keys.GPUFamily:  Family(chosen.CCMajor, chosen.CCMinor),
	}
	if chosen.MemoryMiB > 0 {
		l[keys.GPUMemory] = strconv.FormatUint(chosen.MemoryMiB, 10)
	}
	if v := truncate(sanitize(inv.DriverVersion, "-")); v != "" {
		l[keys.DriverVersion] = v
	}
	if v := CUDAVersion(inv.CUDADriverVersion); v != "" {
		l[keys.CUDAVersion] = v
	}
	if models > 1 {
		l[keys.GPUTypesMixed] = "true"
	}
	if slices.ContainsFunc(inv.GPUs, func(g nvmlinfo.GPU) bool { return g.MIGEnabled }) {
		l[MIGEnabled] = "true"
	}
	return l
}

// modelKey identifies a GPU model: its gpu-type and product name.
type modelKey struct{ gpuType, product string }

// choose picks the most numerous model (ties: smaller gpu-type, then product) and returns
// its first GPU, how many GPUs it has, and how many models there are. A GPU whose memory
// NVML could not read counts with the GPUs of the same product whose memory it could.
func choose(gpus []nvmlinfo.GPU) (nvmlinfo.GPU, int, int) {
	key := func(g nvmlinfo.GPU) modelKey { return modelKey{GPUType(g.Name, g.MemoryMiB), Product(g.Name)} }
	counts := map[modelKey]int{}
	first := map[modelKey]nvmlinfo.GPU{}
	known := map[string]modelKey{} // product -> model of a GPU with known memory
	for _, g := range gpus {
		if g.MemoryMiB > 0 {
			known[Product(g.Name)] = key(g)
		}
	}
	for _, g := range gpus {
		k := key(g)
		if g.MemoryMiB == 0 {
			if kk, ok := known[k.product]; ok {
				k = kk
			}
		}
		counts[k]++
		if f, ok := first[k]; !ok || (f.MemoryMiB == 0 && g.MemoryMiB > 0) {
			first[k] = g
		}
	}
	var best modelKey
	bestCount := 0
	for k, n := range counts {
		if n > bestCount || (n == bestCount && (k.gpuType < best.gpuType || (k.gpuType == best.gpuType && k.product < best.product))) {
			best, bestCount = k, n
		}
	}
	return first[best], bestCount, len(counts)
}
