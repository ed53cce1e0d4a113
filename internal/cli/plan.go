package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/gpuctl/gpuctl/reconciler"
	"github.com/gpuctl/gpuctl/render"
)

// planOptions are the flags shared by diff and sync.
type planOptions struct {
	render RenderOptions
	kube   KubeOptions
	engine EngineOptions
	output string
	color  string
}

// renderPath renders a path; invalid input prints every diagnostic and returns an ExitError.
func (o *planOptions) renderPath(s Streams, path string) (*render.Result, error) {
	r, err := o.render.Renderer()
	if err != nil {
		return nil, err
	}
	res, err := r.Render(diskFS(), path)
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

// plan renders path and plans it against the cluster.
func (o *planOptions) plan(ctx context.Context, s Streams, path string) (*reconciler.Manager, *reconciler.Plan, error) {
	res, err := o.renderPath(s, path)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := o.kube.RESTConfig()
	if err != nil {
		return nil, nil, err
	}
	m, err := o.engine.Manager(cfg)
	if err != nil {
		return nil, nil, err
	}
	plan, err := m.Plan(ctx, res.Objects)
	if err != nil {
		return nil, nil, &ExitError{Code: ExitTrouble, Err: fmt.Errorf("plan: %w", err)}
	}
	return m, plan, nil
}
