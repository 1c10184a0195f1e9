package install

import (
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
)

type dynamicClient = dynamic.Interface

func namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func mapsEqual(a, b map[string]string) bool { return maps.Equal(a, b) }

func contains(s, sub string) bool { return strings.Contains(s, sub) }
