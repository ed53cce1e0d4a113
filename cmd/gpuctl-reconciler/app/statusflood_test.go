package app

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
	"github.com/gpuctl/gpuctl/test/testcluster"
)

// TestStatusFlood (issue 32, finding 3), on the real daemon: 300 GET /api/v1/status at once
// make no request to the API server (the daemon's clients count their GETs of the status
// ConfigMap), and an edit written meanwhile is in the status at once; a token over its rate
// then gets 429 with Retry-After while another token is served. Before, each read was a GET
// through the daemon's client at client-go's 5 a second, shared with the loop's status writes:
// p50 28 s, and the edit's status a minute late.
func TestStatusFlood(t *testing.T) {
	tm := newTeam("flood")
	repo, write := newRepo(t)
	write("quotas/quota.yaml", tm.quota())
	write("teams/"+tm.alice+"/a.yaml", training("a", ""))
	var gets atomic.Int64
	o := &Options{wrapTransport: testcluster.CountRequests(&gets, testcluster.GetOf("configmaps", keys.StatusName))}
	d := startDaemon(t, tm, o, "--source", "dir:"+repo, "--api-qps", "5", "--api-burst", "300")
	first, _, err := d.store.Read(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if o.Rates.KubeQPS != DefaultKubeQPS || o.Rates.KubeBurst != DefaultKubeBurst {
		t.Errorf("the daemon's client rate %v/%d, want %v/%d", o.Rates.KubeQPS, o.Rates.KubeBurst, DefaultKubeQPS, DefaultKubeBurst)
	}

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 300, MaxConnsPerHost: 300}}
	get := func(token string) (int, string) {
		req, err := http.NewRequest(http.MethodGet, d.url+"/api/v1/status", nil)
		if err != nil {
			t.Error(err)
			return 0, ""
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			t.Error(err)
			return 0, ""
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Retry-After")
	}
	before := gets.Load()
	start := make(chan struct{})
	took := make([]time.Duration, 300)
	var wg sync.WaitGroup
	for i := range took {
		wg.Go(func() {
			<-start
			began := time.Now()
			if code, _ := get(opsToken); code != http.StatusOK {
				t.Errorf("status read %d: %d", i, code)
			}
			took[i] = time.Since(began)
		})
	}
	edited := time.Now()
	write("teams/"+tm.alice+"/a.yaml", strings.Replace(training("a", ""), "train.py", "train2.py", 1))
	close(start)
	recorded := time.Duration(0)
	for deadline := edited.Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if st, _, err := d.store.Read(t.Context()); err == nil && st.Revision != first.Revision {
			if st.Result != daemon.ResultSucceeded {
				t.Fatalf("the edit: %s %s", st.Result, st.Message)
			}
			recorded = time.Since(edited)
			break
		}
	}
	wg.Wait()
	slices.Sort(took)
	t.Logf("300 status reads at once: p50 %s, p99 %s, max %s; the edit's status recorded after %s",
		took[150], took[296], took[299], recorded)
	if n := gets.Load() - before; n != 0 {
		t.Errorf("300 status reads made %d GETs of the status ConfigMap, want 0", n)
	}
	if recorded == 0 || recorded > 5*time.Second {
		t.Errorf("the edit's status recorded after %s (0: not in 30 s), want at once", recorded)
	}
	if took[150] > time.Second {
		t.Errorf("p50 of a status read %s", took[150])
	}

	// The burst is spent, and 5 a second do not refill it: ops is over its rate, alice is not.
	limited := 0
	for range 50 {
		code, retry := get(opsToken)
		if code == http.StatusTooManyRequests {
			limited++
			if retry == "" {
				t.Error("429 without Retry-After")
			}
		}
	}
	if limited == 0 {
		t.Error("a token over its rate (5 a second, burst 300) was never answered 429")
	}
	if code, _ := get(aliceToken); code != http.StatusOK {
		t.Errorf("another token: %d, want 200", code)
	}
}
