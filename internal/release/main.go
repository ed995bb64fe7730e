// Command release prepares and tags a release of every module of this
// repository, the core first:
//
//	go run ./internal/release v0.2.0         # set the version, check, print the tags
//	go run ./internal/release -tag v0.2.0    # and commit and tag
//	git push origin main --tags
//
// It makes every module's requirement of a module of this repository name
// the version (their replace directives keep the tree building from
// itself), checks that requirements and replacements agree, and tags the
// core "vX.Y.Z" and each nested module "dir/vX.Y.Z", as the go command
// looks them up. Run it from a clean checkout of main.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/mod/semver"
)

func main() {
	tag := flag.Bool("tag", false, "commit the go.mod changes and create the tags")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: go run ./internal/release [-tag] vX.Y.Z")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *tag); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(version string, tag bool) error {
	if !semver.IsValid(version) || semver.Canonical(version) != version || version == "v0.0.0" {
		return fmt.Errorf("%q is not a release version; give one such as v0.2.0", version)
	}
	root, err := gitOutput("rev-parse", "--show-toplevel")
	if err != nil {
		return err
	}
	if tag {
		if st, err := gitOutput("status", "--porcelain"); err != nil {
			return err
		} else if st != "" {
			return errors.New("the checkout has uncommitted changes; commit or stash them first")
		}
	}
	mods, err := loadModules(root)
	if err != nil {
		return err
	}
	files, err := setVersion(mods, version)
	if err != nil {
		return err
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(root, name), data, 0o644); err != nil {
			return err
		}
	}
	if mods, err = loadModules(root); err != nil {
		return err
	}
	if errs := check(mods); len(errs) > 0 {
		return errors.Join(errs...)
	}
	var tags []string
	for _, m := range mods {
		tags = append(tags, m.tagPrefix()+version)
	}
	if !tag {
		fmt.Printf("%d go.mod files set to %s. Tags to create, in order:\n  %s\n", len(files), version, strings.Join(tags, "\n  "))
		return nil
	}
	if len(files) > 0 {
		if _, err := gitOutput("commit", "-am", "all modules require "+version); err != nil {
			return err
		}
	}
	for _, t := range tags {
		if _, err := gitOutput("tag", t); err != nil {
			return err
		}
		fmt.Println("tagged", t)
	}
	fmt.Println("push them with: git push origin main --tags")
	return nil
}

func gitOutput(args ...string) (string, error) {
	out, err := exec.Command("git", args...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, ee.Stderr)
		}
		return "", fmt.Errorf("git %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}
