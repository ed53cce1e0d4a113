package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/gpuctl/gpuctl/internal/keys"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
)

// ListDiagnosis breaks down the one expensive request of gpuctl's no-op sync: the list of the
// inventory's Jobs (GET /apis/batch/v1/jobs?labelSelector=applyset...part-of=<id>). It repeats
// that request untimed, in the encodings the API server offers, and times each step.
type ListDiagnosis struct {
	Objects int `json:"objects"`
	// Variants: json (what gpuctl's dynamic client asks for, decoded to unstructured, as it
	// does; and decoded to typed batch/v1 JobList), protobuf (typed), and metadata-only
	// (PartialObjectMetadataList: metadata with managedFields, no spec).
	Variants []ListVariant `json:"variants"`
}

// ListVariant is one way of fetching and decoding the list.
type ListVariant struct {
	Name string `json:"name"`
	// Bytes is the body size (after decompression).
	Bytes int64 `json:"bytes"`
	// Headers is the time until the response headers (the server's work before streaming).
	Headers time.Duration `json:"headersNs"`
	// Body is the time to read the body (the server encodes while streaming).
	Body time.Duration `json:"bodyNs"`
	// Decode is the client's time to decode the body.
	Decode time.Duration `json:"decodeNs"`
}

func (v ListVariant) total() time.Duration { return v.Headers + v.Body + v.Decode }

// diagnoseList runs the list of gpuctl's inventory members in namespace ns (whose objects
// carry the inventory's part-of label) in each encoding.
func diagnoseList(ctx context.Context, kube kubernetes.Interface, ns string) (*ListDiagnosis, error) {
	one, err := kube.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return nil, err
	}
	if len(one.Items) == 0 {
		return nil, fmt.Errorf("no Job in %s", ns)
	}
	selector := keys.ApplySetPartOf + "=" + one.Items[0].Labels[keys.ApplySetPartOf]
	fetch := func(accept string) ([]byte, time.Duration, time.Duration, error) {
		start := time.Now()
		rc, err := kube.BatchV1().RESTClient().Get().AbsPath("/apis/batch/v1/jobs").
			Param("labelSelector", selector).SetHeader("Accept", accept).Stream(ctx)
		if err != nil {
			return nil, 0, 0, err
		}
		defer rc.Close()
		headers := time.Since(start)
		b, err := io.ReadAll(rc)
		return b, headers, time.Since(start) - headers, err
	}
	d := &ListDiagnosis{}
	variant := func(name, accept string, decode func([]byte) (int, error)) error {
		b, h, body, err := fetch(accept)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		start := time.Now()
		n, err := decode(b)
		if err != nil {
			return fmt.Errorf("%s: decode: %w", name, err)
		}
		d.Objects = n
		d.Variants = append(d.Variants, ListVariant{Name: name, Bytes: int64(len(b)), Headers: h, Body: body, Decode: time.Since(start)})
		return nil
	}
	decoder := scheme.Codecs.UniversalDeserializer()
	typed := func(b []byte) (int, error) {
		obj, _, err := decoder.Decode(b, nil, nil)
		if err != nil {
			return 0, err
		}
		l, ok := obj.(*batchv1.JobList)
		if !ok {
			return 0, fmt.Errorf("decoded a %T, not a JobList", obj)
		}
		return len(l.Items), nil
	}
	steps := []struct {
		name, accept string
		decode       func([]byte) (int, error)
	}{
		{"json -> unstructured (gpuctl today)", "application/json", func(b []byte) (int, error) {
			var l unstructured.UnstructuredList
			err := l.UnmarshalJSON(b)
			return len(l.Items), err
		}},
		{"json -> typed JobList", "application/json", typed},
		{"protobuf -> typed JobList", "application/vnd.kubernetes.protobuf", typed},
		{"metadata only (PartialObjectMetadataList, json)", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", func(b []byte) (int, error) {
			var l metav1.PartialObjectMetadataList
			err := json.Unmarshal(b, &l)
			return len(l.Items), err
		}},
	}
	for _, s := range steps {
		if err := variant(s.name, s.accept, s.decode); err != nil {
			return nil, err
		}
	}
	return d, nil
}
