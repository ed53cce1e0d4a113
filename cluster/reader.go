package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/gpuctl/gpuctl/internal/keys"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// Reader reads the model from a cluster through Objects: by default with plain List and Get
// calls on every call, keeping nothing between calls. Its methods are safe for concurrent use.
type Reader struct {
	// Client reads the cluster; it must not be nil. It needs list and get on jobs,
	// deployments, statefulsets, pods, nodes and resourcequotas cluster-wide, and list on
	// configmaps in Namespace; Logs needs get on pods/log and watch on pods, JobEvents and
	// Events list on events and replicasets, WatchJobPods watch on jobs, deployments,
	// statefulsets and pods; JobDescription reads the status and drift ConfigMaps in
	// Namespace when it may. JobPods in one namespace needs list there only.
	Client kubernetes.Interface
	// Dynamic reads Kueue's Workloads and ClusterQueues (list on both), the jobs' queue
	// state; without it, or in a cluster without Kueue's API, the jobs have none. It also
	// lists the JobSets of multi-node training (multiNode: jobset; list on jobsets), which are
	// jobs too; without it, the API or the permission there are none.
	Dynamic dynamic.Interface
	// Objects, when set, answers the reader's lists and gets instead of Client and Dynamic
	// (the daemon's InformerObjects); logs are still read with Client.
	Objects Objects
	// Namespace is the system namespace, which holds the pool registry; "" means
	// keys.SystemNamespace.
	Namespace string
	// Log receives a warning for each registry ConfigMap that does not decode; nil discards.
	Log *slog.Logger

	// noKueueUntil is when (Unix ns) a cluster found without Kueue's API is asked again.
	noKueueUntil atomic.Int64
}

func (r *Reader) namespace() string {
	if r.Namespace == "" {
		return keys.SystemNamespace
	}
	return r.Namespace
}

func (r *Reader) log() *slog.Logger {
	if r.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Log
}

// NotFoundError is an unknown job, pool, node or quota user.
type NotFoundError struct {
	// Kind is what was asked for: job, pool, node, user or pod.
	Kind string `json:"kind"`
	// Name is the name or job id that was asked for.
	Name string `json:"name"`
	// Hint, when set, follows the message, e.g. " (a jobId is <namespace>.<name>)".
	Hint string `json:"hint,omitempty"`
}

// Error says what is unknown: `unknown pool "nowhere"`.
func (e *NotFoundError) Error() string {
	return "unknown " + e.Kind + " " + strconv.Quote(e.Name) + e.Hint
}

// AmbiguousError is a bare job name that more than one namespace has.
type AmbiguousError struct {
	// Name is the bare name; IDs are the job ids that have it, sorted.
	Name string   `json:"name"`
	IDs  []string `json:"ids"`
}

func ambiguous(name string, ids []string) *AmbiguousError {
	return &AmbiguousError{Name: name, IDs: ids}
}

// Error lists the job ids to choose from.
func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("job name %q is ambiguous: use one of %s", e.Name, strings.Join(e.IDs, ", "))
}

// FilterError is a filter value that the reader refuses.
type FilterError struct {
	// Field names the filter as the JSON of a list item does: kind, pool, status or gpuType
	// (or a log option: previous, since).
	Field string `json:"field"`
	// Message says what is wrong and what is wanted.
	Message string `json:"message"`
}

// Error is "<field>: <message>".
func (e *FilterError) Error() string { return e.Field + ": " + e.Message }

func filterErrorf(field, format string, args ...any) *FilterError {
	return &FilterError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// Page selects a page of a list: Size items from the (Number-1)×Size-th, Number counting from
// 1. The zero Page is no paging: one page with every item.
type Page struct {
	Number, Size int
}

// number is the page's number as a list reports it (1 for the zero Page).
func (p Page) number() int { return max(p.Number, 1) }

// paginate returns the page's slice of items, empty (not nil) past the end.
func paginate[T any](items []T, p Page) []T {
	if p.Size <= 0 {
		return items
	}
	start := (p.number() - 1) * p.Size
	if start >= len(items) {
		return []T{}
	}
	return items[start:min(start+p.Size, len(items))]
}

// normalizeWord is a filter word without case, spaces, dashes and underscores.
func normalizeWord(s string) string {
	return strings.NewReplacer(" ", "", "-", "", "_", "").Replace(strings.ToLower(s))
}

// ErrorDetail is the read model's typed error as a document, for a transport that sends errors
// as JSON (the daemon's API) and its client, which gives its callers the same error again: at
// most one field is set.
type ErrorDetail struct {
	NotFound  *NotFoundError  `json:"notFound,omitempty"`
	Ambiguous *AmbiguousError `json:"ambiguous,omitempty"`
	Filter    *FilterError    `json:"filter,omitempty"`
	NoLogs    *NoLogsError    `json:"noLogs,omitempty"`
}

// DetailOf finds the read model's typed error in err's chain; ok is false when there is none.
func DetailOf(err error) (d ErrorDetail, ok bool) {
	switch {
	case errors.As(err, &d.NotFound), errors.As(err, &d.Ambiguous), errors.As(err, &d.Filter), errors.As(err, &d.NoLogs):
		return d, true
	}
	return d, false
}

// Err is the error of the document, or nil when it holds none.
func (d ErrorDetail) Err() error {
	switch {
	case d.NotFound != nil:
		return d.NotFound
	case d.Ambiguous != nil:
		return d.Ambiguous
	case d.Filter != nil:
		return d.Filter
	case d.NoLogs != nil:
		return d.NoLogs
	}
	return nil
}

// Unknown reports whether the error is of something that does not exist (a job, pool, node,
// user or pod; a log not there yet), as opposed to a request to correct (ambiguous, filter).
func (d ErrorDetail) Unknown() bool { return d.NotFound != nil || d.NoLogs != nil }
