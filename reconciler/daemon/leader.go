package daemon

import (
	"context"
	"log/slog"
	"time"

	"github.com/gpuctl/gpuctl/internal/keys"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// LeaderOptions configure leader election with a Lease (client-go's leaderelection).
type LeaderOptions struct {
	Kube      kubernetes.Interface
	Namespace string
	Name      string // default gpuctl-reconciler
	Identity  string
	// LeaseDuration is how long a standby waits after the leader's last renewal before it
	// takes over (default 15 s); RenewDeadline (10 s) and RetryPeriod (2 s) as in client-go.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// ReleaseOnCancel gives the lease up at a clean shutdown, so a standby takes over at once.
	ReleaseOnCancel bool
	// OnStandby is called when another replica is seen leading (it may be called again).
	OnStandby func()
	Log       *slog.Logger
}

// RunAsLeader runs fn while this replica holds the lease, until ctx ends. fn's context ends
// when leadership is lost; RunAsLeader then returns (the process should exit and restart, as
// controllers built on client-go do).
func RunAsLeader(ctx context.Context, o LeaderOptions, fn func(context.Context)) {
	if o.Name == "" {
		o.Name = keys.LeaseName
	}
	if o.LeaseDuration == 0 {
		o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 15*time.Second, 10*time.Second, 2*time.Second
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: o.Name, Namespace: o.Namespace},
		Client:     o.Kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: o.Identity},
	}
	leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   o.LeaseDuration,
		RenewDeadline:   o.RenewDeadline,
		RetryPeriod:     o.RetryPeriod,
		ReleaseOnCancel: o.ReleaseOnCancel,
		Name:            o.Name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				o.Log.Info("leading", "identity", o.Identity)
				fn(ctx)
			},
			OnStoppedLeading: func() { o.Log.Info("stopped leading", "identity", o.Identity) },
			OnNewLeader: func(id string) {
				if id != o.Identity {
					o.Log.Info("standing by", "leader", id)
					if o.OnStandby != nil {
						o.OnStandby()
					}
				}
			},
		},
	})
}
