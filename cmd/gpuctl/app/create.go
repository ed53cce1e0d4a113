package app

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpuctl/gpuctl/edit"
	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/render"
)

func newCreateCommand(s Streams) *cobra.Command {
	var o writeOptions
	var files []string
	var team, dir string
	cmd := &cobra.Command{
		Use:   "create -f FILE...",
		Short: "Add gpuctl files to the repository, and commit them",
		Long: `Add gpuctl files to a clone of the GitOps repository and commit them with git: the
reconciler creates the jobs once the commit is pushed (--push).

Each file is checked as gpuctl validate checks the repository once it is there (every error,
with the file's own name, line and column), and kept byte for byte. It goes to --path DIR
(relative to the directory of .gpuctl.yaml), or to the directory that .gpuctl.yaml's
namespace rules give your team: --team, or the team that its teams: map gives your Git
user.email. With neither, it goes where the API puts an admin's file: to the directory of
the namespace its job.namespace names, else (namespace default) to defaultNamespaceDir of
.gpuctl.yaml, by default the directory named after the first workload's kind (training/).
A job name that the repository already has in that namespace, or a file that
exists, is refused. -f - reads standard input (the file is named after its job); -f DIR adds
the *.yaml files of DIR.

In a repository of several clusters (clusters/NAME/ directories, docs/fleet.md), --cluster
NAME puts the team's file in clusters/NAME/<team's directory>, which only cluster NAME runs;
without it the file goes to the shared directory, which every cluster runs, with a warning
saying so.

Exit code 0: committed (or, with --dry-run, the diff printed); 1: refused or failed, nothing
committed.`,
		Example: `  gpuctl create -f qwen2-7b-sft.yaml
  gpuctl create -f qwen2-7b-sft.yaml --push --wait
  gpuctl create -f serve.yaml --team bob --dry-run
  gpuctl create -f qwen2-7b-sft.yaml --cluster gpu-a --push
  gpuctl create -f nightly.yaml --path jobs/nightly --branch add-nightly --push`,
		Args: writeArgs(0, "no arguments (give the files with -f)"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(files) == 0 {
				return failed(errors.New("give the files to create with -f FILE"))
			}
			inputs, err := readInputs(files, cmd.InOrStdin())
			if err != nil {
				return failed(err)
			}
			return runWrite(cmd.Context(), s, &o, func(repo *edit.Repo, me who) (*edit.Result, error) {
				opts, err := createWhere(repo, inputs, dir, team, me)
				if err != nil {
					return nil, err
				}
				res, err := repo.Create(inputs, opts)
				if err == nil {
					res.Warnings = append(res.Warnings, sharedWarnings(repo, res)...)
				}
				return res, err
			})
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return failed(err) })
	f := cmd.Flags()
	f.StringArrayVarP(&files, "filename", "f", nil, "a gpuctl file to add (repeatable; - for standard input, a directory for its *.yaml files)")
	f.StringVar(&team, "team", "", "put the files in this team's directory (default: your team by the teams: of .gpuctl.yaml)")
	f.StringVar(&dir, "path", "", "put the files in this directory, relative to the directory of .gpuctl.yaml")
	o.BindFlags(f)
	return cmd
}

// createWhere says where create puts the files: in --path, else in the directory of the team
// (--team, else the person's by teams:), else where the API puts an admin's files
// (docs/daemon.md): in the directory of the namespace that their workloads name
// (job.namespace), else in namespace default's (edit.Repo.DefaultDir: defaultNamespaceDir of
// .gpuctl.yaml, else the directory named after the first workload's kind).
func createWhere(repo *edit.Repo, files []edit.File, dir, team string, me who) (edit.CreateOptions, error) {
	opts := edit.CreateOptions{Path: dir, Team: cmp.Or(team, me.team)}
	if opts.Path != "" || opts.Team != "" {
		return opts, nil
	}
	kind, named, err := edit.Declared(files)
	if err != nil {
		return opts, err
	}
	if len(named) > 0 && named[0] != keys.DefaultNamespace {
		opts.Team = named[0]
		return opts, nil
	}
	if opts.Path, err = repo.DefaultDir(kind); err != nil {
		return opts, fmt.Errorf("%w; or give --path or --team (your user.email %q is not in teams: of %s)", err, me.email, keys.ConfigFile)
	}
	return opts, nil
}

// sharedWarnings warn of each file that a create puts in a shared directory of a repository of
// several clusters (docs/fleet.md): every cluster runs it, not only the one it was meant for.
func sharedWarnings(repo *edit.Repo, res *edit.Result) []*render.Diagnostic {
	if !repo.HasClusters() {
		return nil
	}
	var names []string
	entries, _ := repo.FS.ReadDir(filepath.Join(repo.Root, render.ClustersDir))
	for _, e := range entries {
		if repo.FS.IsDir(filepath.Join(repo.Root, render.ClustersDir, e)) {
			names = append(names, e)
		}
	}
	sort.Strings(names)
	var out []*render.Diagnostic
	for _, c := range res.Changes {
		dir := path.Dir(c.Path)
		if of, _ := render.SplitCluster(dir); of != "" || c.Action != edit.Created {
			continue
		}
		hint := "--cluster NAME creates it in " + render.ClusterPath("NAME", ".") + "/ for that cluster alone"
		if repo.Cluster != "" {
			hint = fmt.Sprintf("not only %s: --path %s creates it for %s alone", repo.Cluster, render.ClusterPath(repo.Cluster, dir), repo.Cluster)
		}
		out = append(out, &render.Diagnostic{File: c.Path, Severity: render.SeverityWarning, Hint: hint,
			Message: fmt.Sprintf("in a shared directory: every cluster of the repository runs it (%s)", strings.Join(names, ", "))})
	}
	return out
}

// readInputs reads the files of -f: "-" is standard input (once), a directory its *.yaml and
// *.yml files.
func readInputs(names []string, stdin io.Reader) ([]edit.File, error) {
	var out []edit.File
	readStdin := false
	for _, n := range names {
		if n == "-" {
			if readStdin {
				return nil, errors.New("-f -: standard input can be read once")
			}
			readStdin = true
			data, err := io.ReadAll(stdin)
			if err != nil {
				return nil, err
			}
			out = append(out, edit.File{Name: "-", Data: data})
			continue
		}
		fi, err := os.Stat(n)
		if err != nil {
			return nil, err
		}
		list := []string{n}
		if fi.IsDir() {
			list = nil
			entries, err := os.ReadDir(n)
			if err != nil {
				return nil, err
			}
			for _, e := range entries {
				if ext := filepath.Ext(e.Name()); !e.IsDir() && (ext == ".yaml" || ext == ".yml") && !strings.HasPrefix(e.Name(), ".") {
					list = append(list, filepath.Join(n, e.Name()))
				}
			}
			sort.Strings(list)
			if len(list) == 0 {
				return nil, fmt.Errorf("%s: no *.yaml file in the directory", n)
			}
		}
		for _, p := range list {
			data, err := os.ReadFile(p)
			if err != nil {
				return nil, err
			}
			out = append(out, edit.File{Name: p, Data: data, Target: filepath.Base(p)})
		}
	}
	return out, nil
}
