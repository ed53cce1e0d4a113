package app

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
)

// commandName is the CLI's name in help texts and examples when it runs as itself.
const commandName = "gpuctl"

// kubectlPluginPrefix starts the file name of a kubectl plugin: kubectl runs the executable
// kubectl-gpuctl found on PATH for `kubectl gpuctl ARGS...`, passing ARGS through.
const kubectlPluginPrefix = "kubectl-"

// RunProgram runs the command line of a process, argv as the process received it: argv[0]
// is how it was invoked, and names the CLI in help and usage texts (DisplayName); argv[1:]
// are its arguments, run by Run.
func RunProgram(ctx context.Context, s Streams, argv []string) int {
	name, args := commandName, []string(nil)
	if len(argv) > 0 {
		name, args = DisplayName(argv[0]), argv[1:]
	}
	return run(ctx, s, name, args)
}

// DisplayName returns what a user types to run the CLI, from the path it was invoked by:
// "kubectl gpuctl" for the kubectl plugin (an executable named kubectl-gpuctl, which kubectl
// runs with its own path as argv[0]), else "gpuctl" whatever the file is called (gpuctl,
// gpuctl-linux-amd64). kubectl's plugin names map '-' to a space and '_' to '-'; so does this.
func DisplayName(argv0 string) string {
	base := strings.TrimSuffix(filepath.Base(argv0), ".exe")
	plugin, ok := strings.CutPrefix(base, kubectlPluginPrefix)
	if !ok || plugin == "" {
		return commandName
	}
	return "kubectl " + strings.ReplaceAll(strings.ReplaceAll(plugin, "-", " "), "_", "-")
}

// exampleCommand matches the CLI's name where an indented line of an example or of the root's
// overview starts a command with it.
var exampleCommand = regexp.MustCompile(`(?m)^([ \t]+)` + commandName + `([ \t]|$)`)

// setDisplayName makes the command tree's usage lines, help texts and examples name the CLI
// as name ("kubectl gpuctl") rather than gpuctl.
func setDisplayName(root *cobra.Command, name string) {
	if name == commandName {
		return
	}
	if root.Annotations == nil {
		root.Annotations = map[string]string{}
	}
	root.Annotations[cobra.CommandDisplayNameAnnotation] = name
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Long = exampleCommand.ReplaceAllString(c.Long, "${1}"+name+"${2}")
		c.Example = exampleCommand.ReplaceAllString(c.Example, "${1}"+name+"${2}")
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}
