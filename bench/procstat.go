package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat (100 on Linux).
const clockTicks = 100

// components finds the cluster's processes (the children of this process that testcluster
// started) by command name: etcd, kube-apiserver, kube-controller-manager (comm is cut to
// 15 characters), kube-scheduler, kwok. Elsewhere than on Linux it finds none.
func components() map[string]int {
	out := map[string]int{}
	self := os.Getpid()
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		comm, ppid, _, ok := procStat(pid)
		if ok && ppid == self {
			out[comm] = pid
		}
	}
	return out
}

// procStat reads a process's command name, parent and CPU time (user + system, in ticks).
func procStat(pid int) (comm string, ppid int, ticks int64, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, 0, false
	}
	s := string(b)
	open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closing < open {
		return "", 0, 0, false
	}
	comm = s[open+1 : closing]
	f := strings.Fields(s[closing+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return "", 0, 0, false
	}
	ppid, _ = strconv.Atoi(f[1])
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return comm, ppid, utime + stime, true
}

// cpuMeter reads the CPU time of the cluster's components and of this process.
type cpuMeter struct {
	pids map[string]int
}

func newCPUMeter() *cpuMeter { return &cpuMeter{pids: components()} }

// server returns the CPU seconds used so far by kube-apiserver and etcd, the processes that
// serve the engines' requests.
func (m *cpuMeter) server() float64 {
	var t int64
	for comm, pid := range m.pids {
		if comm == "kube-apiserver" || comm == "etcd" {
			_, _, ticks, _ := procStat(pid)
			t += ticks
		}
	}
	return float64(t) / clockTicks
}

// cluster returns the CPU seconds used so far by every cluster component.
func (m *cpuMeter) cluster() float64 {
	var t int64
	for _, pid := range m.pids {
		_, _, ticks, _ := procStat(pid)
		t += ticks
	}
	return float64(t) / clockTicks
}

// processCPU returns the CPU seconds used so far by this process (self) and by its waited-for
// children (kubectl runs).
func processCPU() (self, children float64) {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	self = tv(ru.Utime) + tv(ru.Stime)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
	children = tv(ru.Utime) + tv(ru.Stime)
	return self, children
}

func tv(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }

// settle waits until the cluster is idle again after a pass — the Job controller records a
// Suspended condition on every new Job, and the API server and etcd compact — so that the
// next measurement does not pay for the previous one: the cluster's components together must
// use less than maxCores for two consecutive half-second windows (given up after limit). Then
// it waits, for at most another 20 s, until the whole machine is that quiet as well (other
// builds or tests on a shared machine skew the timings; each pass reports what they used).
func (m *cpuMeter) settle(ctx context.Context, maxCores float64, limit time.Duration) (time.Duration, bool) {
	if len(m.pids) == 0 {
		return 0, true
	}
	start := time.Now()
	if !m.quiet(ctx, m.cluster, maxCores, limit) {
		return time.Since(start), false
	}
	m.quiet(ctx, machineBusy, maxCores+0.1, 20*time.Second)
	return time.Since(start), true
}

// quiet waits until usage grows by less than maxCores per second over two consecutive
// half-second windows, for at most limit.
func (m *cpuMeter) quiet(ctx context.Context, usage func() float64, maxCores float64, limit time.Duration) bool {
	start := time.Now()
	quiet := 0
	prev := usage()
	for time.Since(start) < limit {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(500 * time.Millisecond):
		}
		now := usage()
		if (now-prev)/0.5 < maxCores {
			quiet++
			if quiet >= 2 {
				return true
			}
		} else {
			quiet = 0
		}
		prev = now
	}
	return false
}

// machineBusy returns the CPU seconds that every CPU of the machine has spent busy so far
// (everything but idle and iowait in /proc/stat); 0 where there is no /proc/stat.
func machineBusy() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return 0
	}
	var busy int64
	for i, v := range f[1:] {
		if i >= 7 || i == 3 || i == 4 { // not idle, iowait, steal, guest (counted in user)
			continue
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		busy += n
	}
	return float64(busy) / clockTicks
}
