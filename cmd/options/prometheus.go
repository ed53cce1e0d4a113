package options

import (
	"os"

	"github.com/spf13/pflag"

	"github.com/gpuctl/gpuctl/usage"
)

// Prometheus says where the Prometheus that scrapes dcgm-exporter is (usage.Options): the
// GPU metrics of gpuctl top, idle and describe, and of the daemon's API, page and idle policy.
type Prometheus struct {
	URL             string
	BearerTokenFile string
	CAFile          string
	// Selector is label matchers every series read must carry (usage.Options.Selector).
	Selector string
}

// Environment variables that stand for the Prometheus flags when they are not given.
const (
	EnvPrometheusURL      = "GPUCTL_PROMETHEUS_URL"
	EnvPrometheusToken    = "GPUCTL_PROMETHEUS_BEARER_TOKEN_FILE"
	EnvPrometheusCA       = "GPUCTL_PROMETHEUS_CA_FILE"
	EnvPrometheusSelector = "GPUCTL_PROMETHEUS_SELECTOR"
)

// BindFlags adds --prometheus-url, --prometheus-bearer-token-file, --prometheus-ca-file and
// --prometheus-selector.
func (o *Prometheus) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.URL, "prometheus-url", "", "the Prometheus that scrapes dcgm-exporter, for GPU utilization (default $"+EnvPrometheusURL+"; without: no GPU metrics)")
	fs.StringVar(&o.BearerTokenFile, "prometheus-bearer-token-file", "", "a file whose content is sent to Prometheus as a bearer token (default $"+EnvPrometheusToken+")")
	fs.StringVar(&o.CAFile, "prometheus-ca-file", "", "PEM certificates that Prometheus' TLS certificate must chain to (default $"+EnvPrometheusCA+")")
	fs.StringVar(&o.Selector, "prometheus-selector", "", `label matchers every GPU series must carry, e.g. 'job="dcgm-exporter"': read the exporter's scrape alone, not series a team's pod serves (default $`+EnvPrometheusSelector+")")
}

// Client returns the Prometheus client of the flags, or of the environment for each flag not
// given; usage.ErrNoPrometheus when neither names a URL.
func (o *Prometheus) Client() (*usage.Client, error) {
	or := func(v, env string) string {
		if v != "" {
			return v
		}
		return os.Getenv(env)
	}
	return usage.New(usage.Options{URL: or(o.URL, EnvPrometheusURL), BearerTokenFile: or(o.BearerTokenFile, EnvPrometheusToken),
		CAFile: or(o.CAFile, EnvPrometheusCA), Selector: or(o.Selector, EnvPrometheusSelector)})
}
