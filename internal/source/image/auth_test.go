package image

import (
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
)

func TestLookup(t *testing.T) {
	tests := []struct {
		name  string
		repo  string
		auths []string // keys; the entry of key i has username "i"
		want  string   // the username of the entry found, "" for none
	}{
		{name: "host", repo: "registry.example.com/team/app", auths: []string{"other.example.com", "registry.example.com"}, want: "1"},
		{name: "host with port", repo: "localhost:5000/app", auths: []string{"localhost", "localhost:5000"}, want: "1"},
		{name: "scheme and API path are ignored", repo: "registry.example.com/app", auths: []string{"https://registry.example.com/v2/"}, want: "0"},
		{name: "host is case-insensitive", repo: "registry.example.com/app", auths: []string{"HTTPS://Registry.Example.COM"}, want: "0"},
		{name: "Docker Hub as docker login writes it", repo: "nginx", auths: []string{"https://index.docker.io/v1/"}, want: "0"},
		{name: "Docker Hub as docker.io", repo: "docker.io/library/nginx", auths: []string{"docker.io"}, want: "0"},
		{name: "longest repository path wins", repo: "registry.example.com/team/app",
			auths: []string{"registry.example.com", "registry.example.com/team", "registry.example.com/team/app/x"}, want: "1"},
		{name: "path must match whole segments", repo: "registry.example.com/teamwork/app",
			auths: []string{"registry.example.com/team"}, want: ""},
		{name: "no entry for the registry", repo: "registry.example.com/app", auths: []string{"example.com", "registry.example.org"}, want: ""},
		{name: "no entries", repo: "registry.example.com/app", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo, err := name.NewRepository(tt.repo)
			if err != nil {
				t.Fatal(err)
			}
			auths := map[string]authn.AuthConfig{}
			for i, k := range tt.auths {
				auths[k] = authn.AuthConfig{Username: string(rune('0' + i)), Password: "p"}
			}
			got, ok := lookup(auths, repo)
			if ok != (tt.want != "") || got.Username != tt.want {
				t.Fatalf("lookup = %q, %v; want %q", got.Username, ok, tt.want)
			}
		})
	}
}
