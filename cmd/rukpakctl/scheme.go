package main

import (
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// scheme returns the types rukpakctl reads and writes.
func scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = v1alpha2.AddToScheme(s)
	return s
}
