package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/gpuctl/gpuctl/edit"
	"github.com/gpuctl/gpuctl/internal/humanize"
	"github.com/gpuctl/gpuctl/internal/repopath"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
	"github.com/gpuctl/gpuctl/render"
	"github.com/gpuctl/gpuctl/review"
	"github.com/gpuctl/gpuctl/sources"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The writes of the job API (seed 001 §7.2.1), kept GitOps: each is a commit of the daemon
// (package daemon, Writer), which the sync it triggers applies.

// Writer makes the API's writes: the daemon.
type Writer interface {
	// Write makes one write as a commit (or in the directory of a directory source), and
	// triggers the sync that applies it.
	Write(ctx context.Context, req daemon.WriteRequest) (*daemon.WriteResult, error)
}

// MaxWriteBody is the largest request body of a write (413 above): the files of a batch. Each
// file is held to render.MaxFileSize too.
const MaxWriteBody = 4 << 20

// CreateRequest is the body of POST /api/v1/jobs: a gpuctl file, as seed 001 §7.2.1 sends it.
// With Content-Type application/yaml the body is the file itself, and the other fields are
// query parameters.
type CreateRequest struct {
	// YAMLContent is the file: one or more gpuctl documents (---), kept byte for byte.
	YAMLContent string `json:"yamlContent"`
	// Namespace is the namespace whose directory (by the namespace rules) receives the file;
	// default the file's job.namespace, else the token's one namespace, else default, whose
	// directory (.gpuctl.yaml's defaultNamespaceDir) only an admin writes in.
	Namespace string `json:"namespace,omitempty"`
	// Path is a directory of the repository (relative to the rendered directory) instead;
	// a token that is not admin may name only a directory of its namespaces.
	Path string `json:"path,omitempty"`
	// FileName is the file's name (default <job.name>.yaml); no directory.
	FileName string `json:"fileName,omitempty"`
}

// BatchCreateRequest is the body of POST /api/v1/jobs/batch: several files, one commit.
type BatchCreateRequest struct {
	YAMLContents []string `json:"yamlContents"`
	Namespace    string   `json:"namespace,omitempty"`
	Path         string   `json:"path,omitempty"`
}

// ScaleRequest is the body of POST /api/v1/jobs/{jobId}/scale.
type ScaleRequest struct {
	// Replicas is the new service.replicas (required; a notebook 0 or 1).
	Replicas *int `json:"replicas"`
	// Kind, when given, must be the job's (inference, compute or notebook).
	Kind string `json:"kind,omitempty"`
}

// JobWriteResponse is the answer of a write of a job: the fields of seed 001 §7.2.1 (jobId,
// name, namespace, kind, status, createdAt, message) and where the change went.
type JobWriteResponse struct {
	// JobID is <namespace>.<name> (the name alone of an object of no namespace). Kind is the
	// gpuctl kind of a job, or the kind of a plain object that a create adds (ConfigMap).
	JobID     string `json:"jobId"`
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Kind      string `json:"kind"`
	// Status is what the change asks of the cluster: pending (created, resumed, scaled),
	// paused, terminating (deleted); proposed when it went to a new branch whose pull request
	// must be merged first.
	Status string `json:"status"`
	// Path is the file that declares the job (or declared it), in the repository.
	Path string `json:"path"`
	// Commit is the commit that holds the change (a Git source).
	Commit string `json:"commit,omitempty"`
	// Branch is the branch it was pushed to; PullRequest the page that opens its pull request
	// (with --git-push-branch, on GitHub and GitLab).
	Branch      string `json:"branch,omitempty"`
	PullRequest string `json:"pullRequest,omitempty"`
	// Replicas is the replica count a scale set.
	Replicas  *int      `json:"replicas,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	Message   string    `json:"message"`
	// Warnings are the warnings the change brings to the repository (file:line:col: ...).
	Warnings []string `json:"warnings,omitempty"`
}

// BatchResponse is the answer of POST /api/v1/jobs/batch (seed 001 §7.2.1): the jobs of the one
// commit. The batch is one commit, so it lands whole or not at all: failed is always empty,
// and a refused batch is an error answer.
type BatchResponse struct {
	Success []JobWriteResponse `json:"success"`
	Failed  []JobWriteResponse `json:"failed"`
}

// Statuses of JobWriteResponse.
const (
	statusPending     = "pending"
	statusPaused      = "paused"
	statusTerminating = "terminating"
	statusProposed    = "proposed"
)

// postJob serves POST /api/v1/jobs.
func (s *server) postJob(w http.ResponseWriter, r *http.Request) error {
	var req CreateRequest
	if isYAML(r) {
		data, err := io.ReadAll(r.Body)
		if err != nil {
			return bodyError(err)
		}
		q := r.URL.Query()
		req = CreateRequest{YAMLContent: string(data), Namespace: q.Get("namespace"), Path: q.Get("path"), FileName: q.Get("fileName")}
	} else if err := decodeBody(r, &req); err != nil {
		return err
	}
	file, err := inputFile("yamlContent", req.YAMLContent, req.FileName)
	if err != nil {
		return err
	}
	if err := checkWritePath("path", req.Path); err != nil {
		return err
	}
	out, err := s.write(r, daemon.WriteRequest{Verb: daemon.VerbCreate, Files: []edit.File{file}, Namespace: req.Namespace, Path: req.Path})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, out[0])
	return nil
}

// postJobsBatch serves POST /api/v1/jobs/batch.
func (s *server) postJobsBatch(w http.ResponseWriter, r *http.Request) error {
	var req BatchCreateRequest
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	if len(req.YAMLContents) == 0 {
		return errorf(http.StatusBadRequest, "yamlContents: give at least one file")
	}
	if err := checkWritePath("path", req.Path); err != nil {
		return err
	}
	var files []edit.File
	for i, c := range req.YAMLContents {
		f, err := inputFile(fmt.Sprintf("yamlContents[%d]", i), c, "")
		if err != nil {
			return err
		}
		files = append(files, f)
	}
	out, err := s.write(r, daemon.WriteRequest{Verb: daemon.VerbCreate, Files: files, Namespace: req.Namespace, Path: req.Path})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, BatchResponse{Success: out, Failed: []JobWriteResponse{}})
	return nil
}

// jobWrite serves DELETE /api/v1/jobs/{jobId} and POST /api/v1/jobs/{jobId}/pause|resume|scale.
func (s *server) jobWrite(verb string) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		ref, err := jobRef(r)
		if err != nil {
			return err
		}
		req := daemon.WriteRequest{Verb: verb, Job: ref}
		if verb == daemon.VerbScale {
			var body ScaleRequest
			if err := decodeBody(r, &body); err != nil {
				return err
			}
			if body.Replicas == nil || *body.Replicas < 0 {
				return errorf(http.StatusBadRequest, `replicas: give the number of replicas, 0 or more: {"replicas": 2}`)
			}
			req.Replicas, req.Kind = *body.Replicas, body.Kind
		}
		out, err := s.write(r, req)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, out[0])
		return nil
	}
}

// writing answers 405 to a write when the server has no Writer, before the body is read.
func (s *server) writing(h apiFunc) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if s.opts.Writer == nil {
			w.Header().Set("Allow", "GET, HEAD")
			return writesOff(r, "this server makes no writes")
		}
		return h(w, r)
	}
}

// write makes a write as the request's caller, and describes each of its jobs.
func (s *server) write(r *http.Request, req daemon.WriteRequest) ([]JobWriteResponse, error) {
	p, _ := PrincipalFrom(r.Context())
	req.By = daemon.Writer{Name: p.Name, Admin: p.Admin, AllNamespaces: p.AllNamespaces, Namespaces: p.Namespaces}
	res, err := s.opts.Writer.Write(r.Context(), req)
	if err != nil {
		return nil, s.writeError(r, err)
	}
	return describeWrite(res), nil
}

// describeWrite is the answer of each job of a write.
func describeWrite(res *daemon.WriteResult) []JobWriteResponse {
	e := res.Edit
	status := map[string]string{daemon.VerbCreate: statusPending, daemon.VerbResume: statusPending, daemon.VerbScale: statusPending,
		daemon.VerbPause: statusPaused, daemon.VerbDelete: statusTerminating}[e.Verb]
	msg := "written to " + strings.Join(res.Files, ", ") + "; gpuctl-reconciler applies it now"
	switch {
	case res.Proposed:
		status = statusProposed
		msg = "pushed " + humanize.Revision(res.Commit) + " to the new branch " + res.Branch + ": it applies once merged"
		if res.PullRequest != "" {
			msg += " (open the pull request: " + res.PullRequest + ")"
		}
	case res.Commit != "":
		msg = "committed " + humanize.Revision(res.Commit) + " to " + res.Branch + "; gpuctl-reconciler applies it now"
	}
	var warnings []string
	for _, d := range e.Warnings {
		warnings = append(warnings, d.Error())
	}
	now := time.Now().UTC()
	var out []JobWriteResponse
	for _, wl := range e.Named() { // a create's plain objects too: a ConfigMap, a pool
		jr := JobWriteResponse{JobID: wl.ObjectID(), Name: wl.Name, Namespace: wl.Namespace, Kind: wl.Kind, Status: status,
			Path: path.Join(res.Dir, wl.File), Commit: res.Commit, Branch: res.Branch, PullRequest: res.PullRequest,
			CreatedAt: now, Message: msg, Warnings: warnings}
		if e.Verb == daemon.VerbScale {
			n := e.Replicas
			jr.Replicas = &n
		}
		out = append(out, jr)
	}
	if out == nil { // a create of files without a document (comments only)
		out = []JobWriteResponse{{Status: status, Path: strings.Join(res.Files, ","), Commit: res.Commit, Branch: res.Branch,
			PullRequest: res.PullRequest, CreatedAt: now, Message: msg, Warnings: warnings}}
	}
	return out
}

// writeError is the answer of a write that failed: 400 (with every diagnostic of invalid
// files, or every violation of the review's checks), 403, 404, 405, 409 or 503 (the remote
// failed; nothing was written).
func (s *server) writeError(r *http.Request, err error) error {
	var (
		forbidden *daemon.ForbiddenError
		disabled  *daemon.WritesDisabledError
		push      *sources.PushError
		stuck     *sources.UncheckableError
		invalid   *render.ValidationError
		notFound  *edit.NotFoundError
		exists    *edit.NameExistsError
		fileThere *edit.FileExistsError
		unchanged *edit.UnchangedError
		refused   *review.RefusedError
		editErr   *daemon.EditError
	)
	switch {
	case errors.As(err, &forbidden):
		return errorf(http.StatusForbidden, "%s", err)
	case errors.As(err, &disabled):
		return writesOff(r, err.Error())
	case errors.As(err, &stuck):
		return errorf(http.StatusConflict, "nothing was written: the branch's newest commit %s", err)
	case errors.As(err, &push):
		s.log.Warn("api write not pushed", "method", r.Method, "path", r.URL.Path, "err", err)
		return errorf(http.StatusServiceUnavailable, "nothing was written: %s", err)
	case errors.As(err, &invalid):
		e := errorf(http.StatusBadRequest, "%s", err)
		e.Diagnostics = invalid.Diagnostics()
		return e
	case errors.As(err, &notFound):
		return errorf(http.StatusNotFound, "%s", err)
	case errors.As(err, &exists), errors.As(err, &fileThere), errors.As(err, &unchanged):
		return errorf(http.StatusConflict, "%s", err)
	case errors.As(err, &refused):
		e := errorf(http.StatusBadRequest, "%s", err)
		e.Violations = refused.Violations
		return e
	case errors.As(err, &editErr):
		return errorf(http.StatusBadRequest, "%s", err)
	}
	return err
}

// writesOff is the 405 of a write that the daemon does not make.
func writesOff(w *http.Request, reason string) *Error {
	return errorf(http.StatusMethodNotAllowed, "%s %s: %s; gpuctl is GitOps: commit the file to Git instead "+
		"(POST /api/v1/sync applies the latest revision now)", w.Method, w.URL.Path, reason)
}

// isYAML reports whether a request's body is a YAML file rather than JSON.
func isYAML(r *http.Request) bool {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return mt == "application/yaml" || mt == "application/x-yaml" || mt == "text/yaml"
}

// decodeBody reads a JSON body into v: unknown fields, trailing data and a body over the
// limit are refused.
func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return bodyError(err)
	}
	if dec.More() {
		return errorf(http.StatusBadRequest, "request body: one JSON object expected")
	}
	return nil
}

// bodyError is the answer of a body that cannot be read: 413 over the limit, else 400.
func bodyError(err error) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return errorf(http.StatusRequestEntityTooLarge, "request body over %d bytes", tooBig.Limit)
	}
	return errorf(http.StatusBadRequest, "request body: %s", err)
}

// inputFile is a file of a create, named in diagnostics after its field.
func inputFile(field, content, fileName string) (edit.File, error) {
	switch {
	case strings.TrimSpace(content) == "":
		return edit.File{}, errorf(http.StatusBadRequest, "%s: empty: give the gpuctl file", field)
	case len(content) > render.MaxFileSize:
		return edit.File{}, errorf(http.StatusRequestEntityTooLarge, "%s: over %d bytes", field, render.MaxFileSize)
	}
	if fileName == "" {
		fileName = "-" // named after its first job
	}
	return edit.File{Name: field, Data: []byte(content), Target: fileName}, nil
}

// checkWritePath refuses the directory of a create (field) that no write may name: a dot
// directory, a spelling of .git, anything repopath.Check refuses; "" and "." (the top) pass.
func checkWritePath(field, dir string) error {
	if dir == "" || dir == "." {
		return nil
	}
	if err := repopath.Check(strings.TrimSuffix(dir, "/")); err != nil {
		return errorf(http.StatusBadRequest, "%s: %s", field, err)
	}
	return nil
}

// jobRef reads {jobId} (<namespace>.<name> or a name) and ?namespace=; each must be a
// Kubernetes name.
func jobRef(r *http.Request) (edit.JobRef, error) {
	ref := edit.ParseJobRef(r.PathValue("jobId"), r.URL.Query().Get("namespace"))
	parts := []string{ref.Name}
	if ref.Namespace != "" {
		parts = append(parts, ref.Namespace)
	}
	for _, part := range parts {
		if errs := validation.IsDNS1123Label(part); len(errs) > 0 {
			return ref, errorf(http.StatusBadRequest, "jobId %q: %q is not a namespace or job name: %s", r.PathValue("jobId"), part, errs[0])
		}
	}
	return ref, nil
}
