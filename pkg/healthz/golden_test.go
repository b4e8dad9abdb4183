package healthz

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testdata/*.txt are bodies captured from a real kube-apiserver v1.37.2
// (/work/shared/reference/kube-1.37). Serving checks with the same names
// must reproduce them byte for byte.
func TestGoldenVerbose(t *testing.T) {
	for _, endpoint := range []string{"readyz", "livez", "healthz"} {
		t.Run(endpoint, func(t *testing.T) {
			want := readTestdata(t, endpoint+"-verbose.txt")
			checks := checksFromVerbose(t, want)
			w := serve(Handler(endpoint, fixed(checks...)), "GET", "/"+endpoint, "verbose")
			if w.Code != 200 || w.Body.String() != want {
				t.Fatalf("got %d\n%s\nwant 200\n%s", w.Code, w.Body, want)
			}
		})
	}
}

// readyz-during-startup.txt shows, for each distinct response while a
// server booted, its status and only the failing lines plus the last line.
// Failing the same checks must give the same filtered body and status.
func TestGoldenStartup(t *testing.T) {
	names := checkNames(t, readTestdata(t, "readyz-verbose.txt"))
	blocks := startupBlocks(t, readTestdata(t, "readyz-during-startup.txt"))
	if len(blocks) == 0 {
		t.Fatal("no blocks parsed")
	}
	for _, b := range blocks {
		t.Run(b.title, func(t *testing.T) {
			failing := map[string]bool{}
			for _, l := range b.lines {
				if n, ok := strings.CutPrefix(l, "[-]"); ok {
					failing[strings.TrimSuffix(n, " failed: reason withheld")] = true
				}
			}
			var checks []Checker
			for _, n := range names {
				if failing[n] {
					checks = append(checks, failCheck(n, "not finished"))
					delete(failing, n)
				} else {
					checks = append(checks, okCheck(n))
				}
			}
			if len(failing) > 0 {
				t.Fatalf("failing checks missing from readyz-verbose.txt: %v", failing)
			}
			w := serve(Handler("readyz", fixed(checks...)), "GET", "/readyz", "verbose")
			var got []string
			for _, l := range strings.SplitAfter(w.Body.String(), "\n") {
				if l != "" && !strings.HasPrefix(l, "[+]") {
					got = append(got, strings.TrimSuffix(l, "\n"))
				}
			}
			if w.Code != b.code || strings.Join(got, "\n") != strings.Join(b.lines, "\n") {
				t.Fatalf("got %d %q, want %d %q", w.Code, got, b.code, b.lines)
			}
			if !strings.HasSuffix(w.Body.String(), "\n") {
				t.Error("body does not end in a newline")
			}
		})
	}
}

func readTestdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// checkNames returns the names in a passing verbose body, in order.
func checkNames(t *testing.T, body string) []string {
	t.Helper()
	var names []string
	for _, l := range strings.Split(strings.TrimSuffix(body, "\n"), "\n") {
		if n, ok := strings.CutPrefix(l, "[+]"); ok {
			names = append(names, strings.TrimSuffix(n, " ok"))
		}
	}
	if len(names) == 0 {
		t.Fatal("no check lines in golden body")
	}
	return names
}

func checksFromVerbose(t *testing.T, body string) []Checker {
	var checks []Checker
	for _, n := range checkNames(t, body) {
		checks = append(checks, okCheck(n))
	}
	return checks
}

type startupBlock struct {
	title string
	code  int
	lines []string
}

// startupBlocks parses "== t=<secs>-<status>" headers and the lines below
// them; '#' lines are comments.
func startupBlocks(t *testing.T, text string) []startupBlock {
	t.Helper()
	var blocks []startupBlock
	for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		switch {
		case strings.HasPrefix(l, "#"):
		case strings.HasPrefix(l, "== "):
			title := strings.TrimPrefix(l, "== ")
			code := 0
			switch {
			case strings.HasSuffix(title, "-200"):
				code = 200
			case strings.HasSuffix(title, "-500"):
				code = 500
			default:
				t.Fatalf("unexpected header %q", l)
			}
			blocks = append(blocks, startupBlock{title: title, code: code})
		case len(blocks) > 0:
			blocks[len(blocks)-1].lines = append(blocks[len(blocks)-1].lines, l)
		}
	}
	return blocks
}
