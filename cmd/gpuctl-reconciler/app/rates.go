package app

import (
	"errors"

	"github.com/gpuctl/gpuctl/cmd/gpuctl-reconciler/app/httpapi"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
)

// DefaultKubeQPS and DefaultKubeBurst are the client-side rate of the daemon's own Kubernetes
// clients (--kube-api-qps, --kube-api-burst): its status writes, sync requests, lease, drift
// detector, events and the API's read model and logs. client-go's default, 5 a second (burst
// 10), let a flood of API reads hold back the sync loop's status writes for a minute (issue 32);
// the status is served from memory now, and 50 leaves the loop room beside the API's live
// reads (logs, a lazy read model's first lists). The engine's clients (plan, apply, prune) have
// their own, higher rate (reconciler.NewManager).
const (
	DefaultKubeQPS   = 50
	DefaultKubeBurst = 100
)

// RateOptions are the daemon's rates: of its own Kubernetes clients, and of its API per token.
type RateOptions struct {
	// KubeQPS and KubeBurst bound the requests of the daemon's own clients (see DefaultKubeQPS).
	KubeQPS   float32
	KubeBurst int
	// APIQPS and APIBurst bound each token's requests to the API and the web page
	// (httpapi.Options.RateLimit); a negative APIQPS is no limit.
	APIQPS   float64
	APIBurst int
}

// BindFlags adds --kube-api-qps, --kube-api-burst, --api-qps and --api-burst.
func (o *RateOptions) BindFlags(fs *pflag.FlagSet) {
	fs.Float32Var(&o.KubeQPS, "kube-api-qps", DefaultKubeQPS, "requests a second of the daemon's own Kubernetes clients (status, sync requests, lease, drift detection, the API's reads); apply and prune have their own")
	fs.IntVar(&o.KubeBurst, "kube-api-burst", DefaultKubeBurst, "requests at once of the daemon's own Kubernetes clients")
	fs.Float64Var(&o.APIQPS, "api-qps", httpapi.DefaultRateLimit, "requests a second that each token may make to /api/v1 and the web page; over it they get 429 with Retry-After (negative: no limit)")
	fs.IntVar(&o.APIBurst, "api-burst", httpapi.DefaultRateBurst, "requests at once that each token may make to /api/v1 and the web page")
}

// validate refuses rates that would stop the daemon or the API.
func (o *RateOptions) validate() error {
	switch {
	case o.KubeQPS <= 0 || o.KubeBurst < 1:
		return errors.New("--kube-api-qps must be positive and --kube-api-burst at least 1")
	case o.APIQPS == 0:
		return errors.New("--api-qps 0 would refuse every request: a negative value turns the limit off")
	case o.APIBurst < 1:
		return errors.New("--api-burst must be at least 1")
	}
	return nil
}

// clientConfig is cfg with the rate of the daemon's own clients.
func (o *RateOptions) clientConfig(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.QPS, c.Burst = o.KubeQPS, o.KubeBurst
	return c
}
