package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/gpuctl/gpuctl/cluster"
	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/kube"
)

// One view of the fleet: the read verbs with --clusters a,b or --all-clusters read each
// cluster of the config file's clusters: list (fleetconfig.go) at once, each through its own
// cluster.Model, and print one table with a CLUSTER column first. A cluster that cannot be
// read is one line on standard error and exit code 1; the others still print.

// fleetTimeout bounds the read of one cluster, so that an unreachable one does not hold the
// others' answer.
const fleetTimeout = 20 * time.Second

// fleetOptions are --clusters and --all-clusters.
type fleetOptions struct {
	names []string
	all   bool
	flags *pflag.FlagSet
}

// BindFlags adds --clusters and --all-clusters.
func (o *fleetOptions) BindFlags(fs *pflag.FlagSet) {
	o.flags = fs
	fs.StringSliceVar(&o.names, "clusters", nil, "read these clusters of the config file's clusters: list (a,b), with a CLUSTER column")
	fs.BoolVar(&o.all, "all-clusters", false, "read every cluster of the config file's clusters: list, with a CLUSTER column")
}

// on says whether the command reads the fleet rather than one cluster.
func (o *fleetOptions) on() bool { return o.all || len(o.names) > 0 }

// selected is the clusters that the flags name, from the config file, in the order of their
// names; errors (a bad config file, an unknown name, flags of one cluster with the fleet's)
// exit 2.
func (o *fleetOptions) selected(warn io.Writer) ([]fleetCluster, error) {
	if o.all && len(o.names) > 0 {
		return nil, trouble(errors.New("give --clusters or --all-clusters, not both"))
	}
	for _, one := range []string{"server", "token", "kubeconfig", "context", "reconciler-namespace"} {
		if o.flags != nil && o.flags.Changed(one) {
			return nil, trouble(fmt.Errorf("--%s reads one cluster: the clusters of --clusters and --all-clusters are those of %s", one, configHint))
		}
	}
	path, cfg, err := readConfigFile(warn)
	if err != nil {
		return nil, err
	}
	if len(cfg.Clusters) == 0 {
		return nil, trouble(fmt.Errorf("no clusters: list in %s: name each cluster with its kubeconfig context or its server (see docs/fleet.md)", path))
	}
	var known []string
	for _, c := range cfg.Clusters {
		known = append(known, c.Name)
	}
	var out []fleetCluster
	if o.all {
		out = slices.Clone(cfg.Clusters)
	}
	for _, n := range o.names {
		i := slices.Index(known, n)
		if i < 0 {
			return nil, trouble(fmt.Errorf("--clusters: no cluster %q in %s (clusters: %s)", n, path, strings.Join(known, ", ")))
		}
		if !slices.ContainsFunc(out, func(c fleetCluster) bool { return c.Name == n }) {
			out = append(out, cfg.Clusters[i])
		}
	}
	slices.SortStableFunc(out, func(a, b fleetCluster) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// readConfigFile reads the client's config file: its path and what it holds. Its errors exit 2.
func readConfigFile(warn io.Writer) (string, clientConfig, error) {
	path, err := configPath()
	if err != nil {
		return "", clientConfig{}, trouble(err)
	}
	cfg, err := readClientConfig(path, warn)
	if err != nil {
		return "", clientConfig{}, trouble(err)
	}
	return path, cfg, nil
}

// model is the cluster's read model: the daemon's API for a server, else the kubeconfig's
// context. Its errors exit 2.
func (fc fleetCluster) model() (cluster.Model, error) {
	if fc.Server != "" {
		token, err := fc.token()
		if err != nil {
			return nil, trouble(err)
		}
		return newRemoteModel(fc.Server, token)
	}
	client, dyn, err := kubeClients(fc.kube())
	if err != nil {
		return nil, trouble(err)
	}
	return &cluster.Reader{Client: client, Dynamic: dyn, Namespace: fc.system()}, nil
}

// records is where status reads the cluster's daemon's records, as model chooses.
func (fc fleetCluster) records() (records, error) {
	if fc.Server != "" {
		m, err := fc.model()
		if err != nil {
			return nil, err
		}
		return m.(*remoteModel), nil
	}
	client, err := kubeClient(fc.kube())
	if err != nil {
		return nil, trouble(err)
	}
	return kubeRecords{client: client, namespace: fc.system()}, nil
}

func (fc fleetCluster) kube() *kube.Options {
	return &kube.Options{Kubeconfig: fc.Kubeconfig, Context: fc.Context}
}

func (fc fleetCluster) system() string {
	if fc.Namespace != "" {
		return fc.Namespace
	}
	return keys.SystemNamespace
}

// clusterAnswer is what one cluster answered: its items, or why it could not be read.
type clusterAnswer[T any] struct {
	cluster string
	items   []T
	err     error
}

// readFleet reads each cluster at once with read, each within fleetTimeout, and returns their
// answers in the order of clusters.
func readFleet[T any](ctx context.Context, clusters []fleetCluster, read func(context.Context, fleetCluster) ([]T, error)) []clusterAnswer[T] {
	answers := make([]clusterAnswer[T], len(clusters))
	var wg sync.WaitGroup
	for i, c := range clusters {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, fleetTimeout)
			defer cancel()
			items, err := read(ctx, c)
			answers[i] = clusterAnswer[T]{cluster: c.Name, items: items, err: err}
		})
	}
	wg.Wait()
	return answers
}

// readModels is readFleet through each cluster's read model.
func readModels[T any](ctx context.Context, clusters []fleetCluster, read func(context.Context, cluster.Model) ([]T, error)) []clusterAnswer[T] {
	return readFleet(ctx, clusters, func(ctx context.Context, c fleetCluster) ([]T, error) {
		m, err := c.model()
		if err != nil {
			return nil, err
		}
		return read(ctx, m)
	})
}

// clusterProblem is the line that says why a cluster could not be read: "cluster NAME:
// unreachable: ..." when the network did not answer, else "cluster NAME: ..." with the
// answer (a token refused, an error of the API).
func clusterProblem(name string, err error) string {
	if unreachable(err) {
		return "cluster " + name + ": unreachable: " + err.Error()
	}
	return "cluster " + name + ": " + err.Error()
}

// unreachable says whether err is the network's: no connection, no name, no answer in time.
func unreachable(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded)
}

// fleetExit prints a line on w for each cluster that could not be read and returns the
// command's error: nil when all answered, exit 2 when a cluster's own configuration is at
// fault (a token file, a kubeconfig context), else exit 1; the message is printed already.
func fleetExit[T any](w io.Writer, answers []clusterAnswer[T]) error {
	code := 0
	for _, a := range answers {
		if a.err == nil {
			continue
		}
		fmt.Fprintln(w, clusterProblem(a.cluster, a.err))
		code = max(code, ExitFailed)
		if Code(a.err) == ExitTrouble && errors.As(a.err, new(*ExitError)) {
			code = ExitTrouble
		}
	}
	if code == 0 {
		return nil
	}
	return &ExitError{Code: code}
}

// fleetRow is an item of one cluster of a fleet's table.
type fleetRow[T any] struct {
	cluster string
	item    T
}

// rowsOf are the items of the answers, cluster by cluster (each cluster's in its own order).
func rowsOf[T any](answers []clusterAnswer[T]) []fleetRow[T] {
	var rows []fleetRow[T]
	for _, a := range answers {
		for _, it := range a.items {
			rows = append(rows, fleetRow[T]{a.cluster, it})
		}
	}
	return rows
}

// withCluster are the columns c with CLUSTER first ("<cluster>→<worker>" for an item that runs
// elsewhere: c.elsewhere); -o name prints the cluster and the name.
func withCluster[T any](c listColumns[T]) listColumns[fleetRow[T]] {
	return listColumns[fleetRow[T]]{
		name: func(r fleetRow[T]) string { return r.cluster + " " + c.name(r.item) },
		head: append([]string{"CLUSTER"}, c.head...),
		wide: c.wide,
		cells: func(r fleetRow[T], wide bool) []string {
			where := r.cluster
			if c.elsewhere != nil && c.elsewhere(r.item) != "" {
				where += "→" + c.elsewhere(r.item)
			}
			return append([]string{where}, c.cells(r.item, wide)...)
		},
	}
}

// fleetData is the -o json|yaml document of a fleet's list: the items of every cluster, each
// with its "cluster", and the clusters that could not be read.
type fleetData struct {
	Items      []map[string]any    `json:"items"`
	Unreadable []clusterUnreadable `json:"unreadable,omitempty"`
}

// clusterUnreadable is a cluster that could not be read, in -o json|yaml.
type clusterUnreadable struct {
	Cluster string `json:"cluster"`
	Error   string `json:"error"`
}

// dataOf is the fleetData of the answers: each item is its own JSON document with "cluster"
// added.
func dataOf[T any](answers []clusterAnswer[T]) (fleetData, error) {
	d := fleetData{Items: []map[string]any{}}
	for _, a := range answers {
		if a.err != nil {
			d.Unreadable = append(d.Unreadable, clusterUnreadable{Cluster: a.cluster, Error: a.err.Error()})
			continue
		}
		for _, it := range a.items {
			m, err := asMap(it)
			if err != nil {
				return d, err
			}
			m["cluster"] = a.cluster
			d.Items = append(d.Items, m)
		}
	}
	return d, nil
}

// printFleet prints the answers as -o json|yaml (dataOf), names, or a table with CLUSTER
// first, then says which clusters could not be read (fleetExit). what names the items for the
// note of an empty list.
func printFleet[T any](w, errw io.Writer, output, what string, answers []clusterAnswer[T], c listColumns[T]) error {
	if output == outputJSON || output == outputYAML {
		d, err := dataOf(answers)
		if err != nil {
			return err
		}
		if _, err := writeData(w, output, d); err != nil {
			return err
		}
		return fleetExit(errw, answers)
	}
	rows := rowsOf(answers)
	if len(rows) == 0 {
		if err := fleetExit(errw, answers); err != nil {
			return err
		}
		fmt.Fprintln(errw, "No "+what+" found.")
		return nil
	}
	if output == outputName {
		rows = slices.CompactFunc(rows, func(a, b fleetRow[T]) bool { return a.cluster == b.cluster && c.name(a.item) == c.name(b.item) })
	}
	if err := printList(w, output, nil, rows, withCluster(c)); err != nil {
		return err
	}
	return fleetExit(errw, answers)
}

// asMap is v's JSON document as a map, to which a field can be added.
func asMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	m := map[string]any{}
	return m, json.Unmarshal(b, &m)
}
