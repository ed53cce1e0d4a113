package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:])
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	var opts Options
	var platforms, images, created string
	fs.StringVar(&opts.Version, "version", "", "version stamped into the binaries and the images' tag (required)")
	fs.StringVar(&opts.Revision, "revision", "", "Git commit of the label org.opencontainers.image.revision (default: git rev-parse HEAD)")
	fs.StringVar(&created, "created", os.Getenv("SOURCE_DATE_EPOCH"), "creation time in Unix seconds (default: $SOURCE_DATE_EPOCH, else the commit's time)")
	fs.StringVar(&opts.Root, "root", "", "the repository's root (default: the directory of go env GOMOD)")
	fs.StringVar(&opts.Out, "out", "", "output directory (default: ROOT/bin/images)")
	fs.StringVar(&opts.Debs, "debs", "", "cache of Debian's packages (default: the user cache directory's gpuctl/debs)")
	fs.StringVar(&platforms, "platforms", "linux/amd64,linux/arm64", "platforms of the static images (the node labeler is linux/amd64)")
	fs.StringVar(&images, "images", "", "comma-separated images to build (default: all)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if opts.Version == "" {
		return errors.New("--version is required")
	}
	var err error
	if opts.Root == "" {
		if opts.Root, err = command(ctx, "", "go", "env", "GOMOD"); err != nil {
			return err
		}
		opts.Root = filepath.Dir(opts.Root)
	}
	if opts.Out == "" {
		opts.Out = filepath.Join(opts.Root, "bin", "images")
	}
	if opts.Debs == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			return err
		}
		opts.Debs = filepath.Join(dir, "gpuctl", "debs")
	}
	if opts.Revision == "" {
		if opts.Revision, err = command(ctx, opts.Root, "git", "rev-parse", "HEAD"); err != nil {
			return err
		}
	}
	if created == "" {
		if created, err = command(ctx, opts.Root, "git", "log", "-1", "--format=%ct"); err != nil {
			return err
		}
	}
	secs, err := strconv.ParseInt(created, 10, 64)
	if err != nil {
		return fmt.Errorf("--created: %w", err)
	}
	opts.Created = time.Unix(secs, 0).UTC()
	for _, p := range strings.Split(platforms, ",") {
		plat, err := v1.ParsePlatform(p)
		if err != nil {
			return fmt.Errorf("--platforms: %w", err)
		}
		opts.Platforms = append(opts.Platforms, *plat)
	}
	if images != "" {
		opts.Images = strings.Split(images, ",")
	}
	cfg, err := LoadConfig()
	if err != nil {
		return err
	}
	opts.Source = cfg.Source
	opts.Log = os.Stderr
	if err := os.MkdirAll(opts.Out, 0o755); err != nil {
		return err
	}
	results, err := Build(ctx, cfg, opts)
	if err != nil {
		return err
	}
	for _, r := range results {
		dir := r.Layout
		if rel, err := filepath.Rel(opts.Root, dir); err == nil && !strings.HasPrefix(rel, "..") {
			dir = rel
		}
		fmt.Printf("%s\t%s\toci:%s:%s\n", r.Ref, r.Digest, dir, opts.Version)
	}
	return nil
}

// command runs a command and returns its output's one line.
func command(ctx context.Context, dir, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), stderrOf(err))
	}
	return strings.TrimSpace(string(out)), nil
}
