package app

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/gpuctl/gpuctl/render"
	"github.com/spf13/pflag"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// RenderOptions are the flags shared by commands that render files.
type RenderOptions struct {
	// ConfigFile replaces the .gpuctl.yaml found from the rendered path upwards.
	ConfigFile string
}

// BindFlags adds the options' flags to a flag set.
func (o *RenderOptions) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.ConfigFile, "config", "", "reconciler configuration (namespace mapping, host-path prefixes); default: .gpuctl.yaml found from PATH upwards")
}

// Renderer builds a renderer from the options.
func (o *RenderOptions) Renderer() (*render.Renderer, error) {
	var opts render.Options
	if o.ConfigFile != "" {
		data, err := os.ReadFile(o.ConfigFile)
		if err != nil {
			return nil, &ExitError{Code: ExitTrouble, Err: err}
		}
		cfg, diags := render.ParseConfig(o.ConfigFile, data)
		for _, d := range diags {
			if d.Severity == render.SeverityError {
				return nil, &ExitError{Code: ExitTrouble, Err: fmt.Errorf("%s", d.Error())}
			}
		}
		opts.Config = cfg
		opts.Root = filepath.Dir(o.ConfigFile)
	}
	return render.New(opts), nil
}

// diskFS is the filesystem that commands read.
func diskFS() filesys.FileSystem { return filesys.MakeFsOnDisk() }
