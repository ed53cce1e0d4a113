package sops

import (
	"fmt"
	"testing"
)

// TestKeyringCacheIsBounded: past maxCachedKeys data keys, the cache starts again.
func TestKeyringCacheIsBounded(t *testing.T) {
	k := NewKeyring(nil)
	key := make([]byte, dataKeySize)
	for i := range maxCachedKeys + 1 {
		k.remember(fmt.Sprint(i), key)
	}
	if len(k.keys) != 1 {
		t.Errorf("%d keys cached, want 1", len(k.keys))
	}
	if k.cached(fmt.Sprint(maxCachedKeys)) == nil || k.cached("0") != nil {
		t.Errorf("the cache keeps the wrong keys")
	}
}
