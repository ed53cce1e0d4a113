package testcluster

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// binariesTimeout bounds Main's wait for the binaries, which includes their first build.
const binariesTimeout = 30 * time.Minute

// current is the cluster started by Main.
var current atomic.Pointer[Cluster]

// Current returns the cluster that Main started for this test package. It panics when the
// package's TestMain does not call Main.
func Current() *Cluster {
	c := current.Load()
	if c == nil {
		panic("testcluster.Current: no cluster; the package's TestMain must call testcluster.Main")
	}
	return c
}

// Main starts a cluster for a test package, runs its tests and stops the cluster, returning
// the exit code for os.Exit. If the cluster cannot start, Main prints why and returns 1: the
// tests fail, they are never skipped. Progress lines go to opts.Log, or to stderr under -v. An
// interrupt stops the cluster before the test binary exits.
//
//	func TestMain(m *testing.M) { os.Exit(testcluster.Main(m, testcluster.Options{})) }
func Main(m *testing.M, opts Options) int {
	flag.Parse()
	if opts.Log == nil {
		opts.Log = io.Discard
		if testing.Verbose() {
			opts.Log = os.Stderr
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go stopOnSignal(sigs, cancel)
	bctx, bcancel := context.WithTimeout(ctx, binariesTimeout)
	defer bcancel()
	if opts.BinDir == "" {
		bin, err := Binaries(bctx, os.Stderr)
		if err != nil {
			return failMain(fmt.Errorf("cannot get the cluster binaries: %w", err))
		}
		opts.BinDir = bin
	}
	c, err := StartRetrying(ctx, opts)
	if err != nil {
		return failMain(err)
	}
	current.Store(c)
	code := m.Run()
	if err := c.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "testcluster: stopping the cluster: %v\n", err)
	}
	return code
}

// stopOnSignal cancels a start in progress, or stops the running cluster and exits, when the
// test binary is interrupted.
func stopOnSignal(sigs <-chan os.Signal, cancelStart context.CancelFunc) {
	sig := <-sigs
	cancelStart()
	if c := current.Load(); c != nil {
		fmt.Fprintf(os.Stderr, "testcluster: %v; stopping the cluster\n", sig)
		_ = c.Stop()
		os.Exit(1)
	}
}

// failMain reports a cluster that could not start and returns Main's exit code.
func failMain(err error) int {
	fmt.Fprintf(os.Stderr, "FAIL: testcluster: the local Kubernetes cluster did not start, so no test ran:\n%v\n", err)
	return 1
}

// portTaken tells a start that failed because a component could not bind its port.
func portTaken(err error) bool {
	return strings.Contains(err.Error(), "address already in use")
}
