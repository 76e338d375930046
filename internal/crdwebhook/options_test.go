package crdwebhook

import (
	"slices"
	"testing"

	"k8s.io/utils/ptr"
)

func TestOptions(t *testing.T) {
	tests := []struct {
		name      string
		opts      Options
		wantURL   string
		wantHosts []string
		wantErr   bool
	}{
		{name: "loopback", opts: Options{BindAddress: "127.0.0.1:9443"}, wantURL: "https://127.0.0.1:9443/validate-crd-upgrade", wantHosts: []string{"127.0.0.1"}},
		{name: "any host advertises loopback", opts: Options{BindAddress: ":9443"}, wantURL: "https://127.0.0.1:9443/validate-crd-upgrade", wantHosts: []string{"127.0.0.1"}},
		{name: "advertised", opts: Options{BindAddress: "0.0.0.0:9443", AdvertiseAddress: "rukpak.example.com:443"}, wantURL: "https://rukpak.example.com:443/validate-crd-upgrade", wantHosts: []string{"rukpak.example.com"}},
		{name: "service", opts: Options{BindAddress: ":9443", ServiceName: "rukpak-webhook"}, wantHosts: []string{"rukpak-webhook.rukpak-system.svc", "rukpak-webhook.rukpak-system.svc.cluster.local", "rukpak-webhook.rukpak-system", "rukpak-webhook"}},
		{name: "bad bind address", opts: Options{BindAddress: "9443"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.CertDir = t.TempDir()
			opts, err := tt.opts.withDefaults()
			if (err != nil) != tt.wantErr {
				t.Fatalf("withDefaults: %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if got := opts.hosts(); !slices.Equal(got, tt.wantHosts) {
				t.Errorf("hosts = %q, want %q", got, tt.wantHosts)
			}
			wh := webhookFor(opts, []byte("ca"))
			cc := wh.ClientConfig
			if string(cc.CABundle) != "ca" {
				t.Errorf("caBundle = %q", cc.CABundle)
			}
			if tt.opts.ServiceName != "" {
				if cc.URL != nil || cc.Service == nil || cc.Service.Name != tt.opts.ServiceName || cc.Service.Namespace != "rukpak-system" || ptr.Deref(cc.Service.Path, "") != Path {
					t.Errorf("clientConfig = %+v, want the service", cc)
				}
			} else if cc.Service != nil || ptr.Deref(cc.URL, "") != tt.wantURL {
				t.Errorf("clientConfig = %+v, want url %s", cc, tt.wantURL)
			}
			if *wh.FailurePolicy != "Fail" || *wh.TimeoutSeconds != 10 || wh.ObjectSelector.MatchExpressions[0].Key != "core.rukpak.io/owner-kind" {
				t.Errorf("webhook = %+v", wh)
			}
		})
	}
}
