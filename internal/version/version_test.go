package version

import (
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	const rev = "8f9eed73a0430feed9a14f6c80b75c0cb761facb"
	for _, tc := range []struct {
		name     string
		settings []debug.BuildSetting
		want     string
	}{
		{"no vcs information", []debug.BuildSetting{{Key: "GOOS", Value: "linux"}}, "unknown"},
		{"a clean tree", []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: "false"}}, rev},
		{"a modified tree", []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: "true"}}, rev + "-dirty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fromBuildInfo(tc.settings); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
