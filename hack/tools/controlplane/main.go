// Command controlplane is the local test cluster's control plane in one binary: etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler and kwok, each chosen by the name
// the binary is started under (hack/cluster-tools.sh links those five names to it), or by its
// first argument (`controlplane etcd --version`).
//
// One binary instead of five is what makes a fresh machine's first build short: the packages
// the five share (client-go, the API types, gRPC, etcd's client, OpenTelemetry, ...) compile
// once and are linked once, and one link of the union is far cheaper than five links that each
// repeat most of it. The five processes also share the binary's pages in memory.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	_ "time/tzdata" // CronJob time zones (kube-apiserver, kube-controller-manager)

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.etcd.io/etcd/server/v3/etcdmain"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // JSON log format
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kwokconfig "sigs.k8s.io/kwok/pkg/config"
	kwokcmd "sigs.k8s.io/kwok/pkg/kwok/cmd"
	kwoklog "sigs.k8s.io/kwok/pkg/log"
	"sigs.k8s.io/kwok/pkg/utils/signals"
)

// commands are the programs this binary holds, each what its upstream main does.
var commands = map[string]func(args []string) int{
	"etcd": func(args []string) int {
		etcdmain.Main(args) // exits by itself on an error
		return 0
	},
	"kube-apiserver": func(args []string) int {
		return runCobra(apiserver.NewAPIServerCommand(), args)
	},
	"kube-controller-manager": func(args []string) int {
		return runCobra(controllermanager.NewControllerManagerCommand(), args)
	},
	"kube-scheduler": func(args []string) int {
		return runCobra(scheduler.NewSchedulerCommand(), args)
	},
	"kwok": kwok,
}

func main() {
	name, args := filepath.Base(os.Args[0]), os.Args
	if _, ok := commands[name]; !ok && len(os.Args) > 1 {
		name, args = os.Args[1], os.Args[1:]
	}
	run, ok := commands[name]
	if !ok {
		names := make([]string, 0, len(commands))
		for n := range commands {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Fprintf(os.Stderr, "usage: controlplane %s [flags] (or start it under one of those names)\n", strings.Join(names, "|"))
		os.Exit(2)
	}
	os.Args = args // what each upstream main reads: its own name first
	os.Exit(run(args))
}

// runCobra runs a Kubernetes component's command as its main does (component-base's cli.Run:
// logging flags, flushing logs, the exit code).
func runCobra(cmd *cobra.Command, args []string) int {
	cmd.SetArgs(args[1:])
	return cli.Run(cmd)
}

// kwok is sigs.k8s.io/kwok/cmd/kwok's main, started without the global --version flag that
// Kubernetes' component-base registers (a string-valued flag; cobra, which merges the global
// flags into kwok's command, would then fail kwok's own boolean --version).
func kwok(args []string) int {
	global := pflag.NewFlagSet(args[0], pflag.ExitOnError)
	pflag.CommandLine.VisitAll(func(f *pflag.Flag) {
		if f.Name != "version" {
			global.AddFlag(f)
		}
	})
	pflag.CommandLine = global

	flagset := pflag.NewFlagSet("global", pflag.ContinueOnError)
	flagset.ParseErrorsAllowlist.UnknownFlags = true
	flagset.Usage = func() {}

	ctx := signals.SetupSignalContext()
	ctx, logger := kwoklog.InitFlags(ctx, flagset)
	ctx, err := kwokconfig.InitFlags(ctx, flagset)
	if err != nil {
		_, _ = os.Stderr.Write([]byte(flagset.FlagUsages()))
		logger.Error("Init config flags", "err", err)
		return 1
	}
	command := kwokcmd.NewCommand(ctx)
	command.PersistentFlags().AddFlagSet(flagset)
	command.SetArgs(args[1:])
	if err := command.ExecuteContext(ctx); err != nil {
		logger.Error("Execute exit", "err", err)
		return 1
	}
	return 0
}
