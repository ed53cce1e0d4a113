package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/gpuctl/gpuctl/notify"
	"github.com/gpuctl/gpuctl/notify/forge"
	"github.com/spf13/pflag"
)

// NotifyOptions are the flags of what the daemon tells (docs/notifications.md): alerts routed
// by --alerts-config, commit statuses on the forge of a Git source, and the cluster's name.
type NotifyOptions struct {
	// AlertsConfig is gpuctl-alerts.yaml (--alerts-config); "" sends no alert.
	AlertsConfig string
	// Forge, ForgeAPIURL and ForgeTokenFile configure the commit statuses (forge.Options);
	// without a token file none is posted.
	Forge          string
	ForgeAPIURL    string
	ForgeTokenFile string
	// StatusContext names gpuctl's statuses (default gpuctl, or gpuctl/<cluster>);
	// StatusTargetURL is their link.
	StatusContext   string
	StatusTargetURL string
	// Cluster names the cluster in alerts and in the default status context, in the status,
	// the metric gpuctl_reconciler_info, the Events' source, the commits of writes and the page;
	// it also selects what is rendered (Options.renderOptions).
	Cluster string
}

// BindFlags adds the notification flags.
func (o *NotifyOptions) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.AlertsConfig, "alerts-config", "", "gpuctl-alerts.yaml: the providers (Slack, Microsoft Teams, webhooks) and routes of alerts (no file: no alert)")
	fs.StringVar(&o.Forge, "forge", "", "git: the forge of the commit statuses: github, gitlab, gitea (also Forgejo) or bitbucket (default: from the Git URL's host)")
	fs.StringVar(&o.ForgeAPIURL, "forge-api-url", "", "git: the forge's API (default: the forge's own; gitea: https://HOST/api/v1)")
	fs.StringVar(&o.ForgeTokenFile, "forge-token-file", "", "git: file holding the forge token that posts a commit status after each sync (no file: no status)")
	fs.StringVar(&o.StatusContext, "status-context", "", "the context (name) of gpuctl's commit statuses (default gpuctl, or gpuctl/<cluster> with --cluster)")
	fs.StringVar(&o.StatusTargetURL, "status-target-url", "", "the link of each commit status, such as the daemon's page")
	fs.StringVar(&o.Cluster, "cluster", "", "the cluster's name (in alerts, the default status context, the status, gpuctl_reconciler_info, Events, the commits of writes and the page), and what it renders: the shared files and clusters/NAME/ (docs/fleet.md)")
}

// alerts is the Dispatcher of --alerts-config (nil without one) and the Sender of the
// daemon's alerts (notify.Discard without one). A bad file is an error naming its line.
func (o *NotifyOptions) alerts(log *slog.Logger) (*notify.Dispatcher, notify.Sender, error) {
	if o.AlertsConfig == "" {
		return nil, notify.Discard, nil
	}
	cfg, err := notify.LoadConfig(o.AlertsConfig)
	if err != nil {
		return nil, nil, fmt.Errorf("--alerts-config: %w", err)
	}
	d := notify.NewDispatcher(cfg, notify.DispatcherOptions{Cluster: o.Cluster, Log: log})
	return d, d, nil
}

// statuses is the commit status reporter of a Git source (source: --source), started until
// ctx ends; nil without --forge-token-file. Forge flags without a token file, or with a
// directory source, are an error: they would do nothing.
func (o *NotifyOptions) statuses(ctx context.Context, source string, log *slog.Logger) (*forge.Reporter, error) {
	kind, url, _ := strings.Cut(source, ":")
	if o.ForgeTokenFile == "" {
		if o.Forge != "" || o.ForgeAPIURL != "" || o.StatusContext != "" || o.StatusTargetURL != "" {
			return nil, errors.New("--forge, --forge-api-url, --status-context and --status-target-url need --forge-token-file")
		}
		return nil, nil
	}
	if kind != "git" {
		return nil, errors.New("--forge-token-file: commit statuses are for a git source")
	}
	statusContext := o.StatusContext
	if statusContext == "" && o.Cluster != "" {
		statusContext = forge.DefaultContext + "/" + o.Cluster
	}
	r, err := forge.New(forge.Options{Kind: forge.Kind(o.Forge), APIURL: o.ForgeAPIURL, TokenFile: o.ForgeTokenFile,
		Context: statusContext, TargetURL: o.StatusTargetURL, Log: log}, url)
	if err != nil {
		return nil, fmt.Errorf("commit statuses: %w", err)
	}
	go r.Run(ctx)
	return r, nil
}
