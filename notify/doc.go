// Package notify tells people what gpuctl-reconciler did and found: alerts to chat and
// webhooks (Slack, Microsoft Teams, a generic webhook signed with HMAC-SHA256), routed by an
// administrator's file to the people of each team, deduplicated and rate-limited; and, in
// notify/forge, commit statuses on the Git forge for each synced commit.
//
// The daemon and the drift detector describe what happened as Events and hand them to a
// Sender, which never blocks them: a provider that is down delays nothing.
//
//	cfg, err := notify.LoadConfig("/etc/gpuctl/alerts/gpuctl-alerts.yaml") // --alerts-config
//	if err != nil { return err }                                       // file:line: field: ...
//	d := notify.NewDispatcher(cfg, notify.DispatcherOptions{Cluster: "prod", Log: log})
//	defer d.Close()
//	var s notify.Sender = d // or notify.Discard
//	s.Send(notify.Event{Reason: notify.SyncFailed, Severity: notify.SeverityError, Key: "sync",
//		Message: "revision 0123abcd not applied: teams/alice/sft.yaml:12: ..."})
//
// The Dispatcher (dispatcher.go) reads its routes from gpuctl-alerts.yaml (config.go), sends
// a condition (an Event's team and Key) once until it is resolved, rate-limits each provider
// and posts in the background: slack.go, teams.go and webhook.go make each provider's request.
// docs/notifications.md tells the administrator.
package notify
