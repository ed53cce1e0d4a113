package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/gpuctl/gpuctl/cmd/options"
	"github.com/gpuctl/gpuctl/internal/kube"
	"github.com/gpuctl/gpuctl/internal/term"
	"github.com/gpuctl/gpuctl/reconciler"
	"github.com/gpuctl/gpuctl/render"
)

// planOptions are the flags shared by diff and sync.
type planOptions struct {
	render options.Render
	kube   kube.Options
	engine options.Engine
	output string
	color  string
}

// bindFlags adds the flags shared by diff and sync.
func (o *planOptions) bindFlags(fs *pflag.FlagSet) {
	o.render.BindFlags(fs)
	o.render.BindClusterFlag(fs)
	o.kube.BindFlags(fs)
	o.engine.BindFlags(fs)
	fs.StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	fs.StringVar(&o.color, "color", "auto", "colour the output: auto (when a terminal), always or never")
}

// writeJSON writes v as indented JSON, as kubectl -o json does.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// renderPath renders a path; invalid input prints every diagnostic and returns an ExitError.
func (o *planOptions) renderPath(ctx context.Context, s Streams, path string) (*render.Result, error) {
	r, err := renderer(&o.render)
	if err != nil {
		return nil, err
	}
	res, err := r.RenderContext(ctx, diskFS(), path)
	var ve *render.ValidationError
	if errors.As(err, &ve) {
		for _, d := range res.Diagnostics {
			fmt.Fprintln(s.Err, d.Error())
		}
		return nil, &ExitError{Code: ExitTrouble, Err: fmt.Errorf("%s is invalid: nothing was planned", path)}
	}
	if err != nil {
		return nil, &ExitError{Code: ExitTrouble, Err: err}
	}
	for _, d := range res.Warnings() {
		fmt.Fprintln(s.Err, d.Error())
	}
	return res, nil
}

// plan renders path and plans it against the cluster: scoped to path when it lies below the
// repository root, with what the credentials may read (a team member's may not read the
// inventory or the nodes).
func (o *planOptions) plan(ctx context.Context, s Streams, path string) (*reconciler.Manager, *reconciler.Plan, error) {
	res, err := o.renderPath(ctx, s, path)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := restConfig(&o.kube)
	if err != nil {
		return nil, nil, err
	}
	o.engine.Scope, o.engine.LimitedCredentials = scopeOf(res.Root, path), true
	m, err := manager(&o.engine, cfg)
	if err != nil {
		return nil, nil, err
	}
	pw := newProgressWriter(s.Err, term.IsTerminal(s.Err), time.Now)
	plan, err := m.PlanRender(reconciler.WithPlanProgress(ctx, pw.plan), res) // MultiKueue's copies are kept in a worker only
	pw.end()
	if err != nil {
		return nil, nil, &ExitError{Code: ExitTrouble, Err: fmt.Errorf("plan: %w", err)}
	}
	return m, plan, nil
}

// scopeOf is the part of the repository that path names when it lies below the root the
// renderer found (render.Result.Root): relative to the root, slash-separated, with a trailing
// slash for a directory ("teams/alice/"). nil for the root itself, or a path outside it.
func scopeOf(root, path string) []string {
	abs, err := filepath.Abs(path)
	if err != nil || root == "" {
		return nil
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil
	}
	rel = filepath.ToSlash(rel)
	if fi, err := os.Stat(abs); err == nil && fi.IsDir() {
		rel += "/"
	}
	return []string{rel}
}
