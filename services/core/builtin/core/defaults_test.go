package core

import "testing"

func TestImageTag(t *testing.T) {
	for image, want := range map[string]string{
		"nginx": "latest", "nginx:1.27": "1.27", "nginx:latest": "latest", "localhost:5000/nginx": "latest",
		"localhost:5000/nginx:v2": "v2", "nginx@sha256:abc": "", "nginx:1.2@sha256:abc": "1.2",
	} {
		if got := imageTag(image); got != want {
			t.Errorf("imageTag(%q) = %q, want %q", image, got, want)
		}
	}
}
