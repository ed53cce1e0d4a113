package render

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	k8sjson "k8s.io/apimachinery/pkg/util/json"
)

// TestJSONValueIsTheRoundTrip: where jsonValue converts a value decoded from YAML, it gives
// what the JSON round trip gives, on random values of every type the YAML decoder makes.
func TestJSONValueIsTheRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	converted := 0
	for i := range 20000 {
		v := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": yamlValue(rng, 4)}
		js, err := json.Marshal(v)
		var want map[string]any
		if err == nil {
			err = k8sjson.Unmarshal(js, &want)
		}
		if !jsonValueOK(v) {
			continue
		}
		converted++
		if err != nil {
			t.Fatalf("case %d: converted, but the round trip fails (%v): %#v", i, err, v)
		}
		if !reflect.DeepEqual(v, want) {
			t.Fatalf("case %d: converted\n%#v\nround trip\n%#v", i, v, want)
		}
	}
	if converted < 5000 {
		t.Errorf("only %d of 20000 values converted without the round trip", converted)
	}
}

// yamlValue is a random value of the types yaml.v3 decodes into any.
func yamlValue(rng *rand.Rand, depth int) any {
	n := 10
	if depth == 0 {
		n = 8
	}
	switch rng.IntN(n) {
	case 0:
		return nil
	case 1:
		return rng.IntN(2) == 0
	case 2:
		return []string{"a", "é", "\u2028", "<&>", "\xff", "", "line\n"}[rng.IntN(7)]
	case 3:
		return int(rng.Int64()) >> rng.IntN(64)
	case 4:
		return []float64{0, math.Copysign(0, -1), 1, 1.5, -3, 1e20, 1e21, 9.2233720368547758e18, -9.2233720368547758e18, 1 << 53, 1<<53 - 1, 4611686018427387904, 1e-7, math.NaN(), math.Inf(1), 123456.789}[rng.IntN(16)]
	case 5:
		return []uint64{math.MaxUint64, 1 << 63, 42}[rng.IntN(3)]
	case 6:
		return time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	case 7:
		return map[string]any{}
	case 8:
		m := map[string]any{}
		for range rng.IntN(4) {
			m[string(rune('a'+rng.IntN(26)))] = yamlValue(rng, depth-1)
		}
		return m
	default:
		l := make([]any, rng.IntN(4))
		for i := range l {
			l[i] = yamlValue(rng, depth-1)
		}
		return l
	}
}
