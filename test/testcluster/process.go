package testcluster

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// tailLines is how many lines of a component's log an error quotes.
const tailLines = 30

// process is one running component; its stdout and stderr go to <Dir>/<name>.log.
type process struct {
	name    string
	comp    component // what started it, to start it again (restart.go)
	logPath string
	cmd     *exec.Cmd
	done    chan struct{} // closed once the process has exited
	waitErr error         // valid after done is closed
	// killed is set when a test killed it on purpose (Cluster.StopAPIServer): its exit is no
	// component's death.
	killed atomic.Bool
}

// startProcess starts the component's binary from binDir in dir, logging to dir/<name>.log. Its
// env entries are added to the inherited environment.
func startProcess(dir, binDir string, comp component) (*process, error) {
	name, bin, args, env := comp.name, filepath.Join(binDir, comp.name), comp.args, comp.env
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = sysProcAttr()
	fmt.Fprintf(logFile, "# %s %s\n", bin, strings.Join(args, " "))
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, comp: comp, logPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// ChildProcAttr returns the process attributes testcluster starts its components with: on Linux
// the child dies with SIGKILL when the thread that started it exits, so that no process a test
// starts outlives the test binary, even after a crash (nil elsewhere). Other test rigs that
// start servers (test/promtest) set it as their exec.Cmd's SysProcAttr.
func ChildProcAttr() *syscall.SysProcAttr { return sysProcAttr() }

// exitError describes an exited process, quoting the tail of its log; nil while it runs.
func (p *process) exitError() error {
	select {
	case <-p.done:
	default:
		return nil
	}
	status := "exited"
	if p.waitErr != nil {
		status = "exited: " + p.waitErr.Error()
	}
	return fmt.Errorf("%s %s; last lines of %s:\n%s", p.name, status, p.logPath, Tail(p.logPath, tailLines))
}

// stop sends SIGTERM, then SIGKILL if the process has not exited after grace.
func (p *process) stop(grace time.Duration) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stop %s: %w", p.name, err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	_ = p.cmd.Process.Kill()
	<-p.done
	return nil
}

// stopAll stops every process in procs at once and waits for them.
func stopAll(procs []*process, grace time.Duration) error {
	errs := make([]error, len(procs))
	var wg sync.WaitGroup
	for i, p := range procs {
		wg.Go(func() { errs[i] = p.stop(grace) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Tail returns the last n lines of the file at path, indented, for an error that quotes a log.
func Tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "    " + strings.Join(lines, "\n    ")
}

// FreePorts returns n distinct TCP ports that are free on 127.0.0.1 right now. They are held
// open together so that no two are the same, then released for the components to bind.
func FreePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
