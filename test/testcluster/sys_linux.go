package testcluster

import (
	"os"
	"syscall"
)

// sysProcAttr makes a component die with SIGKILL when the thread that started it exits, so no
// component outlives the test binary or the serve process of hack/cluster, even after a crash.
// Components stay in their parent's process group, so killing that group stops them too.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// lockFile takes an exclusive lock on path, blocking until it is free, and returns its release.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}

// processAlive reports whether a process with this id exists.
func processAlive(pid int) bool {
	return syscall.Kill(pid, 0) != syscall.ESRCH
}
