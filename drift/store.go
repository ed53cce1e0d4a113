package drift

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gpuctl/gpuctl/internal/configmap"
	"github.com/gpuctl/gpuctl/internal/keys"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Store keeps the current report and the history in a ConfigMap (default gpuctl-drift in the
// daemon's namespace). The daemon writes it; anyone who can read ConfigMaps there reads it.
type Store struct {
	Kube      kubernetes.Interface
	Namespace string
	Name      string
}

// NewStore returns the store of the drift ConfigMap in namespace.
func NewStore(kube kubernetes.Interface, namespace string) *Store {
	return &Store{Kube: kube, Namespace: namespace, Name: keys.DriftName}
}

// ErrNoReport is returned by Read when no daemon has written a report yet.
var ErrNoReport = fmt.Errorf("no drift report yet")

// Read returns the stored report and history. Without a ConfigMap it returns ErrNoReport
// (wrapped with where it looked).
func (s *Store) Read(ctx context.Context) (Report, []Entry, error) {
	cm, err := s.Kube.CoreV1().ConfigMaps(s.Namespace).Get(ctx, s.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return Report{}, nil, fmt.Errorf("%w: no ConfigMap %s/%s (is gpuctl-reconciler running in namespace %s?)",
			ErrNoReport, s.Namespace, s.Name, s.Namespace)
	}
	if err != nil {
		return Report{}, nil, err
	}
	var r Report
	if data := cm.Data[keys.DriftReportKey]; data != "" {
		if err := json.Unmarshal([]byte(data), &r); err != nil {
			return Report{}, nil, fmt.Errorf("%s/%s: bad %s: %w", s.Namespace, s.Name, keys.DriftReportKey, err)
		}
	}
	var h []Entry
	if data := cm.Data[keys.DriftHistoryKey]; data != "" {
		if err := json.Unmarshal([]byte(data), &h); err != nil {
			return Report{}, nil, fmt.Errorf("%s/%s: bad %s: %w", s.Namespace, s.Name, keys.DriftHistoryKey, err)
		}
	}
	return r, h, nil
}

// Write records the report (at most MaxItems items) and the history, creating the ConfigMap
// when missing.
func (s *Store) Write(ctx context.Context, r Report, history []Entry) error {
	r.History = nil
	if n := len(r.Items); n > MaxItems {
		r.Truncated += n - MaxItems
		r.Items = r.Items[:MaxItems]
	}
	rb, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if history == nil {
		history = []Entry{}
	}
	hb, err := json.Marshal(history)
	if err != nil {
		return err
	}
	data := map[string]string{keys.DriftReportKey: string(rb), keys.DriftHistoryKey: string(hb)}
	return configmap.WriteData(ctx, s.Kube, s.Namespace, s.Name, data, nil)
}

// AddHistory appends entries to the stored history (bounded to max entries, DefaultHistory
// when 0), keeping the stored report; without a ConfigMap it starts an empty one. It serves a
// daemon that runs no detector (the detector owns the history when there is one).
func (s *Store) AddHistory(ctx context.Context, entries []Entry, max int) error {
	r, hist, err := s.Read(ctx)
	if err != nil && !errors.Is(err, ErrNoReport) {
		return err
	}
	h := History{Max: max, Entries: hist}
	for _, e := range entries {
		h.Add(e)
	}
	return s.Write(ctx, r, h.Entries)
}
