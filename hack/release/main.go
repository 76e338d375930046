// Command release makes a rukpak release: `go run ./hack/release
// --version v0.3.0` writes rukpak.yaml, the manager's multi-arch OCI image
// as a tarball, rukpakctl for each platform and SHA256SUMS to dist/, and
// pushes the image with --push. `make release VERSION=… [REGISTRY=…]` runs
// it; docs/release.md explains each step.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/rukpak/rukpak/internal/release"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run() error {
	opts := release.Options{}
	var imagePlatforms, cliPlatforms string
	flag.StringVar(&opts.Version, "version", "", "the release, such as v0.3.0 (required); the image's tag")
	flag.StringVar(&opts.Commit, "commit", "", "the commit stamped into the binaries; default: git HEAD, -dirty if tracked files changed")
	flag.StringVar(&opts.RepoRoot, "repo", ".", "root of the rukpak module")
	flag.StringVar(&opts.OutDir, "out", "dist", "directory the release is written to")
	flag.StringVar(&opts.ImageRepository, "image", release.DefaultImageRepository, "the manager image's repository, as rukpak.yaml names it")
	flag.BoolVar(&opts.Push, "push", false, "push the image to --image:--version")
	flag.StringVar(&imagePlatforms, "platforms", "linux/amd64,linux/arm64", "the image's platforms")
	flag.StringVar(&cliPlatforms, "cli-platforms", "linux/amd64,linux/arm64,darwin/amd64,darwin/arm64", "rukpakctl's platforms; empty builds none")
	flag.StringVar(&opts.Source, "source", "https://github.com/rukpak/rukpak", "source repository URL for the image's labels")
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}
	var err error
	if opts.ImagePlatforms, err = release.ParsePlatforms(imagePlatforms); err != nil {
		return err
	}
	if opts.CLIPlatforms, err = release.ParsePlatforms(cliPlatforms); err != nil {
		return err
	}
	if opts.RepoRoot, err = filepath.Abs(opts.RepoRoot); err != nil {
		return fmt.Errorf("repository root: %w", err)
	}
	opts.Log = func(format string, args ...any) { fmt.Fprintf(os.Stderr, "release: "+format+"\n", args...) }
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := release.Run(ctx, opts)
	if err != nil {
		return err
	}
	fmt.Printf("rukpak %s (commit %s), image %s\n", opts.Version, res.Commit, res.Image)
	for _, f := range res.Files {
		fmt.Println(filepath.Join(opts.OutDir, f))
	}
	return nil
}
