package queuestate

import (
	"os"
	"testing"

	"github.com/gpuctl/gpuctl/test/testcluster"
)

func TestMain(m *testing.M) { os.Exit(testcluster.Main(m, testcluster.Options{Kueue: true})) }
