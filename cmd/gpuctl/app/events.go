package app

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/gpuctl/gpuctl/cluster"
	"github.com/gpuctl/gpuctl/internal/humanize"
)

// eventsOptions are the flags of gpuctl events.
type eventsOptions struct {
	read          readOptions
	namespace     string
	allNamespaces bool
	output        string
}

func newEventsCommand(s Streams) *cobra.Command {
	var o eventsOptions
	cmd := &cobra.Command{
		Use:   "events [JOB]",
		Short: "Show the Kubernetes events of a job's objects and pods, or of every job, newest last",
		Long: `Show the events of a job: those of its Job, Deployment or StatefulSet, of a Deployment's
ReplicaSets and of its pods, newest last: why a pod is pending (FailedScheduling: not enough
GPUs), pulled, started, killed, ... JOB is <namespace>.<name>, or a name that one namespace
has (or with -n). Without JOB, the events of every job of the namespace -n, or with -A of all
namespaces.`,
		Example: `  gpuctl events alice.qwen2-sft
  gpuctl events -n alice
  gpuctl events -A -o json`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeJobs(&o.read),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outputFlag(o.output, "text", "json", "yaml"); err != nil {
				return err
			}
			if len(args) == 1 && o.allNamespaces || len(args) == 0 && !o.allNamespaces && o.namespace == "" {
				return &ExitError{Code: ExitTrouble, Err: fmt.Errorf("name a JOB, or give -n NAMESPACE or -A (not both)")}
			}
			r, err := o.read.Model(s.Err)
			if err != nil {
				return err
			}
			var list cluster.EventList
			switch {
			case len(args) == 1:
				list, err = r.JobEvents(cmd.Context(), jobID(o.namespace, args[0]))
			case o.allNamespaces:
				list, err = r.Events(cmd.Context(), "")
			default:
				list, err = r.Events(cmd.Context(), o.namespace)
			}
			if err != nil {
				return readError(err)
			}
			return printEvents(s, list, o.output, o.allNamespaces, time.Now())
		},
	}
	f := cmd.Flags()
	o.read.BindFlags(f)
	f.StringVarP(&o.namespace, "namespace", "n", "", "the namespace of JOB, or whose jobs to show")
	f.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "the events of every job in every namespace")
	f.StringVarP(&o.output, "output", "o", "text", "output format: text, json or yaml")
	return cmd
}

// printEvents writes the events as kubectl get events does (LAST SEEN, TYPE, REASON, OBJECT,
// MESSAGE; NAMESPACE first with -A), or as the API's JSON or YAML.
func printEvents(s Streams, list cluster.EventList, output string, withNamespace bool, now time.Time) error {
	switch output {
	case "json":
		return writeJSON(s.Out, list)
	case "yaml":
		b, err := sigsyaml.Marshal(list)
		if err != nil {
			return err
		}
		_, err = s.Out.Write(b)
		return err
	}
	if len(list.Items) == 0 {
		fmt.Fprintln(s.Err, "No events.")
		return nil
	}
	tw := tabwriter.NewWriter(s.Out, 0, 4, 3, ' ', 0)
	cols := []string{"LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"}
	if withNamespace {
		cols = append([]string{"NAMESPACE"}, cols...)
	}
	row(tw, cols...)
	for _, e := range list.Items {
		cells := []string{lastSeen(now, e), e.Type, e.Reason, e.Object, oneLine(e.Message)}
		if withNamespace {
			cells = append([]string{e.Namespace}, cells...)
		}
		row(tw, cells...)
	}
	return tw.Flush()
}

func row(w io.Writer, cells ...string) { fmt.Fprintln(w, strings.Join(cells, "\t")) }

// lastSeen is kubectl's LAST SEEN: the age of the last occurrence, with the count and the age
// of the first when it happened more than once: "5m (x3 over 12m)".
func lastSeen(now time.Time, e cluster.Event) string {
	s := humanize.Age(now.Sub(e.LastSeen))
	if e.Count > 1 {
		s += fmt.Sprintf(" (x%d over %s)", e.Count, humanize.Age(now.Sub(e.FirstSeen)))
	}
	return s
}

// oneLine joins the lines of a message, so that a row stays one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
