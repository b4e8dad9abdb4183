package version

import (
	"runtime/debug"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apimachineryversion "k8s.io/apimachinery/pkg/version"
)

func TestFromBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{Main: debug.Module{Version: "v0.3.1-0.20261203010000-4d7638ad4b6f+dirty"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "4d7638ad4b6f1b5c"}, {Key: "vcs.modified", Value: "true"}}}
	var info apimachineryversion.Info
	fillFromBuildInfo(&info, bi)
	assert.Equal(t, "v1.37.0-apichain+v0.3.1-0.20261203010000-4d7638ad4b6f.dirty", info.GitVersion)
	assert.Equal(t, "4d7638ad4b6f1b5c", info.GitCommit)
	assert.Equal(t, "dirty", info.GitTreeState)

	// A work-tree build without VCS information says so instead of inventing a commit.
	info = apimachineryversion.Info{}
	fillFromBuildInfo(&info, &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}})
	assert.Equal(t, apimachineryversion.Info{GitVersion: "v1.37.0-apichain", GitCommit: "unknown"}, info)

	// Link-time stamps win.
	info = apimachineryversion.Info{GitVersion: "v1.37.0-apichain+stamped", GitCommit: "abc", GitTreeState: "clean"}
	fillFromBuildInfo(&info, bi)
	assert.Equal(t, apimachineryversion.Info{GitVersion: "v1.37.0-apichain+stamped", GitCommit: "abc", GitTreeState: "clean"}, info)
}

func TestGet(t *testing.T) {
	info := Get()
	assert.Equal(t, "1", info.Major)
	assert.Equal(t, "37", info.Minor)
	assert.NotEmpty(t, info.GoVersion)
	built, err := time.Parse(time.RFC3339, info.BuildDate)
	require.NoError(t, err, "the test binary's own modification time")
	assert.WithinDuration(t, time.Now(), built, 24*time.Hour)
}
