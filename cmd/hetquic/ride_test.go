package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRideBadInput(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"format":"hetquic-ride-mlp/1","paths":2,"features":3}`), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"ride", "eval", "--frames", "-1"}, "--frames -1"},
		{[]string{"ride", "eval", "--policy", "/nonexistent/p.json"}, "nonexistent"},
		{[]string{"ride", "eval", "--policy", bad}, "features"},
		{[]string{"ride", "eval", "extra"}, "unexpected argument"},
		{[]string{"ride", "eval", "--video", "6"}, "--video 6"},
		{[]string{"ride", "eval", "--baselines=false"}, "nothing to play"},
		{[]string{"ride", "env", "extra"}, "unexpected argument"},
	} {
		err := dispatch(context.Background(), tc.args)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want a usage error (exit 2) mentioning %q", tc.args, err, tc.want)
		}
	}
}

func TestRideExperimentValidates(t *testing.T) {
	if err := dispatch(context.Background(), []string{"exp", "validate", "ride-eval"}); err != nil {
		t.Fatal(err)
	}
}
