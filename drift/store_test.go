package drift

import (
	"context"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	"k8s.io/client-go/kubernetes/fake"
)

// TestAddHistory: entries are appended to the stored history, bounded, and the stored report
// is kept; without a ConfigMap one is started.
func TestAddHistory(t *testing.T) {
	ctx := context.Background()
	s := NewStore(fake.NewClientset(), keys.SystemNamespace)
	entry := func(name string) Entry {
		return Entry{Time: time.Unix(0, 0).UTC(), Change: TakenBack, Item: Item{Object: object.Ref{Kind: "Deployment", Name: name}, Category: Modified}}
	}
	if err := s.AddHistory(ctx, []Entry{entry("a")}, 0); err != nil {
		t.Fatal(err)
	}
	if _, h, err := s.Read(ctx); err != nil || len(h) != 1 || h[0].Item.Object.Name != "a" {
		t.Fatalf("history of a new ConfigMap: %+v, %v", h, err)
	}
	if err := s.Write(ctx, Report{Mode: ModeReport, Items: []Item{{Object: object.Ref{Kind: "Job", Name: "j"}, Category: Deleted}}},
		[]Entry{entry("a")}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddHistory(ctx, []Entry{entry("b"), entry("c")}, 2); err != nil {
		t.Fatal(err)
	}
	r, h, err := s.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 2 || h[0].Item.Object.Name != "b" || h[1].Item.Object.Name != "c" || h[1].Change != TakenBack {
		t.Fatalf("history %+v, want b and c", h)
	}
	if len(r.Items) != 1 || r.Mode != ModeReport {
		t.Fatalf("the stored report was not kept: %+v", r)
	}
}
