package manager

import (
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kscheme "k8s.io/client-go/kubernetes/scheme"
)

func clientgoscheme(s *runtime.Scheme) error {
	if err := kscheme.AddToScheme(s); err != nil {
		return fmt.Errorf("adding built-in types: %w", err)
	}
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		return fmt.Errorf("adding apiextensions types: %w", err)
	}
	return nil
}
