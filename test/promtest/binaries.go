package promtest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/gpuctl/gpuctl/test/testcluster"
)

// EnvBinDir names the environment variable that points at a directory already holding
// prometheus and promtool; hack/prometheus.sh then downloads nothing.
const EnvBinDir = "GPUCTL_PROMETHEUS_BIN"

// script unpacks the binaries, relative to the repository root.
const script = "hack/prometheus.sh"

// Binaries runs hack/prometheus.sh from the repository root (found by
// [testcluster.RepoRoot]), which unpacks Debian's prometheus package into the user cache the
// first time (apt-get download + dpkg-deb -x; the script locks against concurrent runs) and
// returns the directory holding prometheus and promtool. The script's progress goes to log
// (which may be nil).
func Binaries(ctx context.Context, log io.Writer) (string, error) {
	if log == nil {
		log = io.Discard
	}
	root, err := testcluster.RepoRoot()
	if err != nil {
		return "", err
	}
	var stdout bytes.Buffer
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, script))
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = &stdout, log
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s failed: %w (set %s to a directory holding prometheus and promtool to skip it)", script, err, EnvBinDir)
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	dir := strings.TrimSpace(lines[len(lines)-1])
	for _, name := range []string{"prometheus", "promtool"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Mode()&0o111 == 0 {
			return "", fmt.Errorf("%s printed %q, which holds no executable %s", script, dir, name)
		}
	}
	return dir, nil
}
