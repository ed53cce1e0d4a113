package forge

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
)

// api is one forge's way to post a commit status.
type api struct {
	// defaultURL is the API's base when Options.APIURL is "".
	defaultURL func(repository) string
	// descLimit is the longest description the forge takes, in characters.
	descLimit int
	// states spells gpuctl's States in the forge's words.
	states map[State]string
	// build returns the request's path under the API URL, its JSON body and its
	// authentication header, for state in the forge's spelling.
	build func(r *Reporter, sha, state, description string) (path string, body any, authKey, authValue string)
}

// apis are the forges' APIs, each as its documentation gives it.
var apis = map[Kind]api{
	// GitHub, "Create a commit status"
	// (https://docs.github.com/en/rest/commits/statuses#create-a-commit-status):
	// "POST /repos/{owner}/{repo}/statuses/{sha}" with "state" (error, failure, pending,
	// success), "target_url", "description" ("A short description of the status") and
	// "context"; headers "Accept: application/vnd.github+json", "Authorization: Bearer
	// <YOUR-TOKEN>", "X-GitHub-Api-Version: 2022-11-28"; "Status: 201". A description over
	// 140 characters is refused with a 422 ("description is too long (maximum is 140
	// characters)").
	GitHub: {
		defaultURL: func(repository) string { return "https://api.github.com" },
		descLimit:  140,
		states:     map[State]string{StatePending: "pending", StateSuccess: "success", StateFailure: "failure", StateError: "error"},
		build:      reposStatuses("Bearer "),
	},
	// GitLab, "Set the pipeline status of a commit"
	// (https://docs.gitlab.com/api/commits/#set-the-pipeline-status-of-a-commit):
	// "POST /projects/:id/statuses/:sha", id "The ID or URL-encoded path of the project",
	// "state" (pending, running, success, failed, canceled, skipped), "name" ("The label to
	// differentiate this status from the status of other systems"), "target_url",
	// "description"; 201 Created. Authentication (https://docs.gitlab.com/api/rest/authentication/):
	// a personal, project or group access token "in either the private_token parameter or
	// the PRIVATE-TOKEN header" — gpuctl uses the header, which every token kind that can
	// post statuses accepts. A sync under way is "running" (GitLab's "pending" is a job
	// waiting for a runner); StateError, which GitLab lacks, is "failed".
	GitLab: {
		defaultURL: func(repository) string { return "https://gitlab.com/api/v4" },
		descLimit:  255,
		states:     map[State]string{StatePending: "running", StateSuccess: "success", StateFailure: "failed", StateError: "failed"},
		build: func(r *Reporter, sha, state, description string) (string, any, string, string) {
			return "/projects/" + url.PathEscape(r.repo.path) + "/statuses/" + url.PathEscape(sha),
				map[string]any{"state": state, "name": r.context,
					"description": description, "target_url": r.target},
				"PRIVATE-TOKEN", r.token
		},
	},
	// Gitea and Forgejo, "Create a commit status" (https://gitea.com/api/swagger#/repository/repoCreateStatus,
	// Forgejo's https://codeberg.org/api/swagger): "POST /repos/{owner}/{repo}/statuses/{sha}"
	// with CreateStatusOption {"context", "description", "state", "target_url"}, state
	// "pending", "success", "error", "failure" or "warning"; 201. Authentication
	// (https://docs.gitea.com/development/api-usage): "Authorization: token ..." in the header.
	Gitea: {
		defaultURL: func(repo repository) string { return repo.web + "/api/v1" },
		descLimit:  255,
		states:     map[State]string{StatePending: "pending", StateSuccess: "success", StateFailure: "failure", StateError: "error"},
		build:      reposStatuses("token "),
	},
	// Bitbucket Cloud, "Create a build status for a commit"
	// (https://developer.atlassian.com/cloud/bitbucket/rest/api-group-commit-statuses/#api-repositories-workspace-repo-slug-commit-commit-statuses-build-post):
	// "POST /repositories/{workspace}/{repo_slug}/commit/{commit}/statuses/build" with
	// "key", "state" (INPROGRESS, SUCCESSFUL, FAILED, STOPPED), "name", "url" (required:
	// "A URL linking back to the vendor or build system") and "description"; 201.
	// Repository, project and workspace access tokens are sent "as a bearer token in an
	// HTTP Authorization header".
	Bitbucket: {
		defaultURL: func(repository) string { return "https://api.bitbucket.org/2.0" },
		descLimit:  255,
		states:     map[State]string{StatePending: "INPROGRESS", StateSuccess: "SUCCESSFUL", StateFailure: "FAILED", StateError: "FAILED"},
		build: func(r *Reporter, sha, state, description string) (string, any, string, string) {
			link := r.target
			if link == "" {
				link = r.repo.web + "/" + r.repo.path
			}
			return "/repositories/" + pathOf(r.repo) + "/commit/" + url.PathEscape(sha) + "/statuses/build",
				map[string]any{"key": r.context, "state": state, "name": r.context,
					"url": link, "description": description},
				"Authorization", "Bearer " + r.token
		},
	},
}

// reposStatuses builds the request of GitHub and of Gitea, alike but for the token's
// scheme: POST /repos/{owner}/{repo}/statuses/{sha} {state, target_url, description, context}.
func reposStatuses(scheme string) func(r *Reporter, sha, state, description string) (string, any, string, string) {
	return func(r *Reporter, sha, state, description string) (string, any, string, string) {
		return "/repos/" + pathOf(r.repo) + "/statuses/" + url.PathEscape(sha),
			map[string]any{"state": state, "target_url": r.target, "description": description, "context": r.context},
			"Authorization", scheme + r.token
	}
}

// pathOf is owner/repo, each part escaped.
func pathOf(repo repository) string {
	return url.PathEscape(repo.owner) + "/" + url.PathEscape(repo.name)
}

// request builds the POST of status s on sha.
func (r *Reporter) request(ctx context.Context, sha string, s status) (*http.Request, error) {
	a := apis[r.kind]
	path, body, authKey, authValue := a.build(r, sha, a.states[s.state], s.description)
	if m, ok := body.(map[string]any); ok && m["target_url"] == "" {
		delete(m, "target_url") // no link: the field is left out rather than empty
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.apiURL+path, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(authKey, authValue)
	if r.kind == GitHub {
		req.Header.Set("Accept", "application/vnd.github+json")
		req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	} else {
		req.Header.Set("Accept", "application/json")
	}
	req.Header.Set("User-Agent", "gpuctl")
	return req, nil
}
