package generate

import (
	"bytes"
	"errors"
	"go/token"
	"io/fs"
	"os"
)

// Write writes each file whose content differs from what is on disk and
// removes the files with nil Content. Files already up to date are not
// touched, so their modification times stay put.
func Write(files []File) error {
	var errs []error
	for _, f := range files {
		old, err := os.ReadFile(f.Path)
		exists := err == nil
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		switch {
		case f.Content == nil && exists:
			errs = append(errs, os.Remove(f.Path))
		case f.Content != nil && (!exists || !bytes.Equal(old, f.Content)):
			errs = append(errs, os.WriteFile(f.Path, f.Content, 0o644))
		}
	}
	return errors.Join(errs...)
}

// Stale returns the paths of the files whose content on disk differs from
// files (missing, outdated, or present although it should be removed).
func Stale(files []File) ([]string, error) {
	var stale []string
	for _, f := range files {
		old, err := os.ReadFile(f.Path)
		exists := err == nil
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		if f.Content == nil && exists || f.Content != nil && (!exists || !bytes.Equal(old, f.Content)) {
			stale = append(stale, f.Path)
		}
	}
	return stale, nil
}

// positionOf is the position of a whole file, for diagnostics about it.
func positionOf(path string) token.Position {
	return token.Position{Filename: path}
}
