package app

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuctl/gpuctl/cluster"
	"github.com/gpuctl/gpuctl/internal/humanize"
	"github.com/gpuctl/gpuctl/internal/markdown"
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
	if ok, err := writeData(s.Out, output, list); ok {
		return err
	}
	if len(list.Items) == 0 {
		fmt.Fprintln(s.Err, "No events.")
		return nil
	}
	head := eventHead
	if withNamespace {
		head = append([]string{"NAMESPACE"}, head...)
	}
	rows := [][]string{head}
	for _, e := range list.Items {
		cells := eventCells(e, now)
		if withNamespace {
			cells = append([]string{e.Namespace}, cells...)
		}
		rows = append(rows, cells)
	}
	return (&table{}).write(s.Out, rows...)
}

// eventHead are the columns of an event, as kubectl events prints them.
var eventHead = []string{"LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"}

// eventCells are the cells of an event under eventHead.
func eventCells(e cluster.Event, now time.Time) []string {
	return []string{lastSeen(now, e), e.Type, e.Reason, e.Object, oneLine(e.Message)}
}

// lastSeen is kubectl's LAST SEEN: the age of the last occurrence, with the count and the age
// of the first when it happened more than once: "5m (x3 over 12m)".
func lastSeen(now time.Time, e cluster.Event) string {
	s := humanize.Age(now.Sub(e.LastSeen))
	if e.Count > 1 {
		s += fmt.Sprintf(" (x%d over %s)", e.Count, humanize.Age(now.Sub(e.FirstSeen)))
	}
	return s
}

// oneLine is a message of someone else's as one row (markdown.Words): an event's message is
// written by whoever may create events in the namespace, and must not reach the terminal raw.
func oneLine(s string) string { return markdown.Words(s) }
