package admissiontest

import (
	"os"
	"testing"

	"github.com/gpuctl/gpuctl/internal/testcluster"
)

func TestMain(m *testing.M) { os.Exit(testcluster.Main(m, testcluster.Options{})) }
