package generate

import (
	"bytes"
	"errors"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// earlierOutputs returns removals for the files of m's directory, other
// than those of this run, that this generator wrote (they start with
// Header) and that the build configuration of this run would compile: an
// earlier run with another -output, or for a build constraint that no
// wrapper has any more, left them behind. A file for another platform or
// tag set is left alone, since this run cannot see its types; a file
// without the header is never touched.
func earlierOutputs(m *pkgModel, produced []File, matches *fileMatcher) ([]File, error) {
	dir := packageDir(m)
	if dir == "" {
		return nil, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []File
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || slices.ContainsFunc(produced, func(f File) bool { return f.Path == path }) {
			continue
		}
		ours, err := startsWithHeader(path)
		if err != nil {
			return nil, err
		}
		if ours && matches.file(dir, e.Name()) {
			out = append(out, File{Path: path})
		}
	}
	return out, nil
}

// startsWithHeader reports whether the file at path starts with Header on
// a line of its own, reading no more than that.
func startsWithHeader(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	buf := make([]byte, len(Header)+1)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return false, err
	}
	return string(buf[:n]) == Header+"\n", nil
}

// positionOf is the position of a whole file, for diagnostics about it.
func positionOf(path string) token.Position {
	return token.Position{Filename: path}
}
