package generate

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestByModule(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"a", "nested/pkg", "nested/inner/x"} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	for _, d := range []string{".", "nested", "nested/inner"} {
		require.NoError(t, os.WriteFile(filepath.Join(root, d, "go.mod"), []byte("module m\n"), 0o644))
	}
	nested, inner := filepath.Join(root, "nested"), filepath.Join(root, "nested", "inner")

	for _, tc := range []struct {
		dir      string
		patterns []string
		want     []moduleRun
	}{
		{root, nil, []moduleRun{{dir: root}}},
		{root, []string{"./...", "./a", "example.com/x/..."}, []moduleRun{{root, []string{"./...", "./a", "example.com/x/..."}}}},
		{root, []string{"./nested/..."}, []moduleRun{{nested, []string{"./..."}}}},
		{root, []string{"./nested/pkg", "./a", "./nested/p...", "./nested/"}, []moduleRun{
			{root, []string{"./a"}},
			{nested, []string{"./pkg", "./p...", "."}},
		}},
		{root, []string{"./nested/inner/x", "./nested/pkg/..."}, []moduleRun{
			{inner, []string{"./x"}},
			{nested, []string{"./pkg/..."}},
		}},
		{root, []string{filepath.Join(nested, "pkg")}, []moduleRun{{nested, []string{"./pkg"}}}},
		{filepath.Join(root, "a"), []string{"../nested/...", "."}, []moduleRun{
			{filepath.Join(root, "a"), []string{"."}},
			{nested, []string{"./..."}},
		}},
		{nested, []string{"../a", "./pkg"}, []moduleRun{
			{nested, []string{"./pkg"}},
			{root, []string{"./a"}},
		}},
	} {
		require.Equal(t, tc.want, byModule(tc.dir, tc.patterns), "byModule(%s, %q)", tc.dir, tc.patterns)
	}
}
