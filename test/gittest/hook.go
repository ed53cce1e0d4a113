package gittest

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
)

// PostGitHubPush sends url a GitHub push event for ref (refs/heads/main), signed with secret as
// GitHub signs it (X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body>), and returns
// the answer's status code.
func PostGitHubPush(ctx context.Context, url, secret, ref string) (int, error) {
	body := []byte(fmt.Sprintf(`{"ref":%q}`, ref))
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}
