package object_test

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpuctl/gpuctl/internal/object"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestAppendJSONIsMarshal: AppendJSON writes json.Marshal's bytes, on random values that hold
// what escaping and number formatting treat apart, and on every test object.
func TestAppendJSONIsMarshal(t *testing.T) {
	check := func(v any) {
		t.Helper()
		want, wantErr := json.Marshal(v)
		got, err := object.AppendJSON([]byte("prefix"), v)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("error %v, json.Marshal's %v, for %#v", err, wantErr, v)
		}
		if err == nil && !bytes.Equal(got, append([]byte("prefix"), want...)) {
			t.Fatalf("AppendJSON\n%s\njson.Marshal\n%s", got[len("prefix"):], want)
		}
	}
	for _, typed := range typedObjects() {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
		if err != nil {
			t.Fatal(err)
		}
		check(m)
	}
	for _, f := range []float64{0, math.Copysign(0, -1), 1e-6, 1e-7, 9.99999e-7, 1e20, 1e21, 1.5e300, -2.5e-300, 0.1, 1 / 3.0, math.MaxFloat64, math.SmallestNonzeroFloat64, 123456789012345678} {
		check(f)
		check(-f)
	}
	check(math.NaN())
	check(map[string]any{"a": math.Inf(1)})
	check(map[string]any(nil))
	check([]any(nil))
	check(map[string]any{"typed": []string{"a<b"}, "labels": map[string]string{"x": "&"}, "n": json.Number("12.50"), "i": 7, "i32": int32(-3)})
	rng := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		check(randomJSON(rng, 4))
	}
}

// randomJSON is a random value of an unstructured object, depth levels deep at most.
func randomJSON(rng *rand.Rand, depth int) any {
	n := 7
	if depth == 0 {
		n = 5
	}
	switch rng.IntN(n) {
	case 0:
		return nil
	case 1:
		return rng.IntN(2) == 0
	case 2:
		return randomString(rng)
	case 3:
		return int64(rng.Uint64())
	case 4:
		return math.Float64frombits(rng.Uint64()) // NaN and infinities too: errors
	case 5:
		m := map[string]any{}
		for range rng.IntN(20) {
			m[randomString(rng)] = randomJSON(rng, depth-1)
		}
		return m
	default:
		l := make([]any, rng.IntN(5))
		for i := range l {
			l[i] = randomJSON(rng, depth-1)
		}
		return l
	}
}

// randomString holds ASCII, the bytes JSON escapes, multi-byte runes, the line and paragraph
// separators and invalid UTF-8.
func randomString(rng *rand.Rand) string {
	pieces := []string{"a", "Z", "9", " ", "\"", "\\", "<", ">", "&", "\n", "\t", "\b", "\f", "\r", "\x00", "\x1f", "\x7f", "é", "世", "😀", "\u2028", "\u2029", "\xff", "\xe4\xb8", "/"}
	var b []byte
	for range rng.IntN(12) {
		b = append(b, pieces[rng.IntN(len(pieces))]...)
	}
	return string(b)
}
