package testcluster

import (
	"context"
	"fmt"
	"os"
)

// StopAPIServer kills kube-apiserver with SIGKILL, as a crash would (no graceful shutdown, no
// request drained), and returns once it has exited: until StartAPIServer every client gets
// "connection refused" at the same address. etcd and the other components keep running; Wait
// does not take the kill for a component's death. It is the fault drill of an API-server outage
// (reconciler/daemon's outage tests).
func (c *Cluster) StopAPIServer() error { return c.kill("kube-apiserver") }

// StartAPIServer starts kube-apiserver again after StopAPIServer, with the same port,
// certificates and etcd (so every object is still there and every kubeconfig and client
// works), and returns once it reports ready (/readyz).
func (c *Cluster) StartAPIServer(ctx context.Context) error {
	return c.restart(ctx, "kube-apiserver")
}

// StopEtcd kills etcd with SIGKILL and returns once it has exited; its data directory is kept.
// The API server keeps running and answers, but /readyz fails and reads and writes fail until
// StartEtcd.
func (c *Cluster) StopEtcd() error { return c.kill("etcd") }

// StartEtcd starts etcd again after StopEtcd, over the same data directory and ports, and
// returns once the API server reports ready.
func (c *Cluster) StartEtcd(ctx context.Context) error { return c.restart(ctx, "etcd") }

// find returns the tier, the index and the process of the component name; c.mu is held.
func (c *Cluster) find(name string) (tier, i int, p *process, err error) {
	for t, procs := range c.tiers {
		for j, q := range procs {
			if q.name == name {
				tier, i, p = t, j, q
			}
		}
	}
	if p == nil {
		return 0, 0, nil, fmt.Errorf("testcluster: no component %s", name)
	}
	return tier, i, p, nil
}

// kill kills the component name on purpose and waits until it has exited.
func (c *Cluster) kill(name string) error {
	c.mu.Lock()
	_, _, p, err := c.find(name)
	c.mu.Unlock()
	if err != nil {
		return err
	}
	select {
	case <-p.done:
		return fmt.Errorf("testcluster: %s is not running: %w", name, p.exitError())
	default:
	}
	p.killed.Store(true)
	if err := p.cmd.Process.Kill(); err != nil {
		return fmt.Errorf("testcluster: kill %s: %w", name, err)
	}
	<-p.done
	c.logf("%s killed", name)
	return nil
}

// restart starts the component name, which kill stopped, again with the arguments it had (its
// earlier log kept as <name>.log.<n>), and waits until the API server reports ready.
func (c *Cluster) restart(ctx context.Context, name string) error {
	c.mu.Lock()
	tier, i, old, err := c.find(name)
	if err == nil && !old.killed.Load() {
		err = fmt.Errorf("testcluster: %s was not stopped by the test", name)
	}
	if err != nil {
		c.mu.Unlock()
		return err
	}
	<-old.done
	c.restarts++
	_ = os.Rename(old.logPath, fmt.Sprintf("%s.%d", old.logPath, c.restarts))
	p, err := startProcess(c.Dir, c.bin, old.comp)
	if err != nil {
		c.mu.Unlock()
		return err
	}
	c.tiers[tier][i] = p
	c.mu.Unlock()
	c.watch(p)
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if err := c.waitReadyz(ctx); err != nil {
		return fmt.Errorf("restart %s: %w", name, err)
	}
	c.logf("%s started again", name)
	return nil
}
