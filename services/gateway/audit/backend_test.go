package audit

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apichain/apichain/pkg/requestinfo"
	"github.com/apichain/apichain/pkg/user"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// The log rotates at --audit-log-maxsize and keeps --audit-log-maxbackup files; every line
// of every file is one whole event.
func TestLogBackendRotates(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	b := NewLogBackend(Options{LogPath: path, MaxSize: 1, MaxBackups: 2})
	defer b.Close()
	ev := &auditv1.Event{TypeMeta: metav1.TypeMeta{Kind: "Event", APIVersion: "audit.k8s.io/v1"}, Level: auditv1.LevelMetadata,
		Stage: auditv1.StageResponseComplete, RequestURI: "/api/v1/namespaces/default/configmaps/" + strings.Repeat("x", 900)}
	for range 4000 { // about 4 MB
		b.Process(ev)
	}
	// lumberjack removes old backups in the background.
	var files []string
	require.Eventually(t, func() bool {
		files, _ = filepath.Glob(filepath.Join(dir, "audit*.log"))
		return len(files) == 3
	}, 10*time.Second, 10*time.Millisecond, "the current file and two backups")
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		assert.LessOrEqual(t, len(data), 1<<20)
		sc := bufio.NewScanner(strings.NewReader(string(data)))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var got auditv1.Event
			require.NoError(t, json.Unmarshal(sc.Bytes(), &got), f)
			assert.Equal(t, ev.RequestURI, got.RequestURI)
		}
	}
}

func TestPolicies(t *testing.T) {
	p, err := LoadPolicy("")
	require.NoError(t, err)
	admin := &user.User{Name: "admin", Groups: []string{"system:masters"}}
	secret := &requestinfo.RequestInfo{IsResourceRequest: true, Verb: "create", APIVersion: "v1", Resource: "secrets", Namespace: "a"}
	assert.Equal(t, auditinternal.LevelMetadata, p.Evaluate(admin, secret).Level)
	assert.Equal(t, auditinternal.LevelNone, p.Evaluate(nil, &requestinfo.RequestInfo{Verb: "get", Path: "/readyz"}).Level)
	pod := &requestinfo.RequestInfo{IsResourceRequest: true, Verb: "create", APIVersion: "v1", Resource: "pods", Namespace: "a"}
	cfg := p.Evaluate(admin, pod)
	assert.Equal(t, auditinternal.LevelRequestResponse, cfg.Level)
	assert.Equal(t, []auditinternal.Stage{auditinternal.StageRequestReceived}, cfg.OmitStages)

	bad := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Loud\n"), 0o600))
	_, err = LoadPolicy(bad)
	assert.ErrorContains(t, err, "Loud")
}
