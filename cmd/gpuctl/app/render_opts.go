package app

import (
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/gpuctl/gpuctl/cmd/options"
	"github.com/gpuctl/gpuctl/render"
)

// renderer builds a renderer from the render flags; a bad configuration exits 2.
func renderer(ro *options.Render) (*render.Renderer, error) {
	r, err := ro.Renderer()
	if err != nil {
		return nil, &ExitError{Code: ExitTrouble, Err: err}
	}
	return r, nil
}

// diskFS is the filesystem that commands read.
func diskFS() filesys.FileSystem { return filesys.MakeFsOnDisk() }
