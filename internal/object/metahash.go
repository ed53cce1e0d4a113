package object

import (
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
)

// MetaHash is a short hash of an object's labels and annotations: enough to tell that either
// changed, at a fraction of their size. The drift detector keeps it in its metadata cache and
// the engine compares it with the one it saw when it last found the object up to date.
func MetaHash(labels, annotations map[string]string) string {
	h := fnv.New64a()
	for _, kv := range []map[string]string{labels, annotations} {
		for _, k := range slices.Sorted(maps.Keys(kv)) {
			h.Write([]byte(k + "=" + kv[k] + "\n"))
		}
		h.Write([]byte{0})
	}
	return strconv.FormatUint(h.Sum64(), 36)
}
