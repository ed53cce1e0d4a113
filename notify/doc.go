// Package notify tells people what gpuctl-reconciler did and found: alerts to chat and
// webhooks (Slack, Microsoft Teams, a generic webhook signed with HMAC-SHA256), routed by an
// administrator's file to the people of each team, deduplicated and rate-limited; and, in
// notify/forge, commit statuses on the Git forge for each synced commit.
//
// The daemon and the drift detector describe what happened as Events and hand them to a
// Sender, which never blocks them: a provider that is down delays nothing.
//
//	var s notify.Sender = dispatcher // or notify.Discard
//	s.Send(notify.Event{Reason: notify.SyncFailed, Severity: notify.SeverityError, Key: "sync",
//		Message: "revision 0123abcd not applied: teams/alice/sft.yaml:12: ..."})
package notify
