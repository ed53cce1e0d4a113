package forge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/gpuctl/gpuctl/notify/forge"
)

func Example() {
	// A stand-in for api.github.com.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var b map[string]string
		_ = json.NewDecoder(req.Body).Decode(&b)
		fmt.Println(req.Method, req.URL.Path, b["context"], b["state"], b["description"])
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	tokenFile := filepath.Join(os.TempDir(), "gpuctl-example-forge-token")
	_ = os.WriteFile(tokenFile, []byte("github_pat_example\n"), 0o600)
	defer os.Remove(tokenFile)

	r, err := forge.New(forge.Options{APIURL: srv.URL, TokenFile: tokenFile, Context: "gpuctl/prod"},
		"git@github.com:acme/gpu-jobs.git")
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go r.Run(ctx)
	r.Report("0123abcd", forge.StateSuccess, "applied: 3 created, 1 updated")
	_ = r.Flush(ctx)
	// Output: POST /repos/acme/gpu-jobs/statuses/0123abcd gpuctl/prod success applied: 3 created, 1 updated
}
