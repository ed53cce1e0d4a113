package git_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/gpuctl/gpuctl/sources/git"
)

// A source that follows main of a private GitHub repository, renders clusters/prod, polls
// every minute and is woken by GitHub's push webhooks.
func ExampleNew() {
	opts := git.DefaultOptions("https://github.com/org/config.git", "main")
	opts.Path = "clusters/prod"
	opts.Auth.TokenFile = "/var/run/secrets/git/token"
	src, err := git.New(opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer src.Close()

	mux := http.NewServeMux()
	mux.Handle("POST /hooks/git", git.NewWebhookHandler(git.WebhookGitHub,
		"/var/run/secrets/git/webhook", src, slog.Default()))

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rev, err := src.Fetch(ctx)
	if err != nil {
		fmt.Println(err) // rev is still the last good revision, if any
	}
	fmt.Println(rev.ID, rev.Dir, rev.Changed)
}

// Pinning a commit over SSH: the server's host key is checked against known_hosts.
func ExampleAuthOptions_ssh() {
	src, err := git.New(git.Options{
		URL: "git@github.com:org/config.git",
		Ref: "0123456789abcdef0123456789abcdef01234567",
		Auth: git.AuthOptions{
			SSHKeyFile:     "/var/run/secrets/git/identity",
			KnownHostsFile: "/var/run/secrets/git/known_hosts",
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer src.Close()
}
