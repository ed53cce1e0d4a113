package httpapi_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/gpuctl/gpuctl/cmd/gpuctl-reconciler/app/httpapi"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes/fake"
)

// The API with a token file: list jobs with a user's token; without a Writer (the daemon, which
// commits them to Git) writes answer 405.
func ExampleNew() {
	dir, _ := os.MkdirTemp("", "gpuctl-tokens")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "tokens.csv")
	_ = os.WriteFile(path, []byte("s3cret,alice\nr00t,ops,admin\n"), 0o600)
	tokens, err := httpapi.LoadStaticTokens(path, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := httptest.NewServer(httpapi.New(httpapi.Options{
		Kube:     fake.NewClientset(), // a real clientset in the daemon
		Tokens:   tokens,
		Registry: prometheus.NewRegistry(),
	}))
	defer srv.Close()

	for _, method := range []string{http.MethodGet, http.MethodPost} {
		req, _ := http.NewRequest(method, srv.URL+"/api/v1/jobs", nil)
		req.Header.Set("Authorization", "Bearer s3cret")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("%s %d %s", method, resp.StatusCode, body)
	}
	// Output:
	// GET 200 {
	//   "total": 0,
	//   "page": 1,
	//   "pageSize": 20,
	//   "items": []
	// }
	// POST 405 {
	//   "error": "POST /api/v1/jobs: this server makes no writes; gpuctl is GitOps: commit the file to Git instead (POST /api/v1/sync applies the latest revision now)",
	//   "code": 405
	// }
}
