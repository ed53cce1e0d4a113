package promtest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// envDie makes TestDiesWithTestBinary's child start a Prometheus, print its pid and exit
// without stopping it.
const envDie = "PROMTEST_START_AND_EXIT"

// TestDiesWithTestBinary: a Prometheus whose test binary exits without Stop (a crash, a
// timeout) is killed with it.
func TestDiesWithTestBinary(t *testing.T) {
	if os.Getenv(envDie) != "" {
		p, err := Start(context.Background(), Options{Dir: os.Getenv(envDie)})
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("pid", p.cmd.Process.Pid)
		os.Exit(0) // no Stop
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestDiesWithTestBinary$")
	cmd.Env = append(os.Environ(), envDie+"="+t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	var pid int
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "pid "); ok {
			pid, _ = strconv.Atoi(rest)
		}
	}
	if pid == 0 {
		t.Fatalf("child printed no pid:\n%s", out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("prometheus %d outlived its test binary by 10 s", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
