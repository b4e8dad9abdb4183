// Package version is what /version reports: the kube API level apichain serves (kubectl
// checks its skew against it) and the build that serves it. The build comes from -ldflags
// stamps when the build set them (make does), otherwise from what the Go toolchain recorded
// in the binary: the module version and, with -buildvcs=true, the git commit and whether the
// tree was modified; the build date is then the executable's modification time, the time it
// was linked.
package version

import (
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	apimachineryversion "k8s.io/apimachinery/pkg/version"
)

// The kube API level: apichain serves kube 1.37's API.
const (
	Major = "1"
	Minor = "37"
)

// Stamped at link time, for example
// -X github.com/apichain/apichain/pkg/version.gitVersion=v1.37.0-apichain+abc1234.
var (
	gitVersion   string
	gitCommit    string
	gitTreeState string
	buildDate    string
)

// Get returns the version of the running binary.
func Get() apimachineryversion.Info {
	info := apimachineryversion.Info{Major: Major, Minor: Minor, GitVersion: gitVersion, GitCommit: gitCommit,
		GitTreeState: gitTreeState, BuildDate: buildDate,
		GoVersion: runtime.Version(), Compiler: runtime.Compiler, Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, _ := debug.ReadBuildInfo()
	fillFromBuildInfo(&info, bi)
	if info.BuildDate == "" {
		info.BuildDate = executableTime()
	}
	return info
}

// fillFromBuildInfo fills what the stamps left empty from the toolchain's record.
func fillFromBuildInfo(info *apimachineryversion.Info, bi *debug.BuildInfo) {
	var module string
	settings := map[string]string{}
	if bi != nil {
		module = bi.Main.Version
		for _, s := range bi.Settings {
			settings[s.Key] = s.Value
		}
	}
	if info.GitVersion == "" {
		info.GitVersion = "v" + Major + "." + Minor + ".0-apichain"
		if module != "" && module != "(devel)" {
			// Build metadata: a module version's '+' (as in "+dirty") may not appear twice.
			info.GitVersion += "+" + strings.ReplaceAll(module, "+", ".")
		}
	}
	if info.GitCommit == "" {
		info.GitCommit = settings["vcs.revision"]
		if info.GitCommit == "" {
			info.GitCommit = "unknown"
		}
	}
	if info.GitTreeState == "" {
		switch settings["vcs.modified"] {
		case "true":
			info.GitTreeState = "dirty"
		case "false":
			info.GitTreeState = "clean"
		}
	}
}

// executableTime is when the running binary was written, in kube's BuildDate format.
func executableTime() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	st, err := os.Stat(exe)
	if err != nil {
		return ""
	}
	return st.ModTime().UTC().Format(time.RFC3339)
}
