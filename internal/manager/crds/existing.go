package crds

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/slipway-dev/slipway/internal/manager/invalid"
)

// listPageSize is how many custom resources one list request asks for.
const listPageSize = 500

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// InvalidObject is an existing custom resource the new schema refuses or would strip.
type InvalidObject struct {
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Version is the CRD version whose new schema the object was checked against.
	Version string `json:"version"`
	// Errors are the validation errors, and the fields the new schema would prune, each
	// with its path.
	Errors []string `json:"errors"`
}

// Existing is what ValidateExisting found in one cluster.
type Existing struct {
	// Installed is whether the cluster has the CRD at all.
	Installed bool `json:"installed"`
	// Objects is how many custom resources were checked.
	Objects int `json:"objects"`
	// Invalid are the objects with findings, sorted by namespace and name.
	Invalid []InvalidObject `json:"invalid"`
}

// ValidateExisting is ValidateExistingWith over a dynamic client for cfg.
func ValidateExisting(ctx context.Context, cfg *rest.Config, newCRD *apiextensionsv1.CustomResourceDefinition) (*Existing, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building a client: %w", err)
	}
	return ValidateExistingWith(ctx, dyn, newCRD)
}

// ValidateExistingWith lists the custom resources of newCRD in a cluster and checks each against
// the new definition the way the API server would once it is applied: the object is read in the
// new storage version, fields the new schema does not know are pruned (reported: their data
// would be lost), defaults are applied, and the result is validated with the structural-schema
// validator, list-type rules and x-kubernetes-validations (CEL). A CRD the cluster does not have
// has no objects (Installed false). A bad newCRD is *invalid.Error for field "definition".
func ValidateExistingWith(ctx context.Context, dyn dynamic.Interface, newCRD *apiextensionsv1.CustomResourceDefinition) (*Existing, error) {
	checker, err := newChecker(newCRD)
	if err != nil {
		return nil, err
	}
	res := &Existing{Invalid: []InvalidObject{}}
	u, err := dyn.Resource(crdResource).Get(ctx, newCRD.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return res, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading CRD %s: %w", newCRD.Name, err)
	}
	current := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), current); err != nil {
		return nil, fmt.Errorf("decoding CRD %s: %w", newCRD.Name, err)
	}
	res.Installed = true
	listVersion := servedVersion(current, checker.version)
	if listVersion == "" {
		return res, nil // nothing served: no object can be read
	}
	gvr := schema.GroupVersionResource{Group: current.Spec.Group, Version: listVersion, Resource: current.Spec.Names.Plural}
	out := res.Invalid
	opts := metav1.ListOptions{Limit: listPageSize}
	for {
		list, err := dyn.Resource(gvr).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", gvr.GroupResource(), err)
		}
		res.Objects += len(list.Items)
		for i := range list.Items {
			if errs := checker.check(ctx, &list.Items[i]); len(errs) > 0 {
				out = append(out, InvalidObject{Namespace: list.Items[i].GetNamespace(), Name: list.Items[i].GetName(), Version: checker.version, Errors: errs})
			}
		}
		if list.GetContinue() == "" {
			break
		}
		opts.Continue = list.GetContinue()
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	res.Invalid = out
	return res, nil
}

// servedVersion is the version to read objects in: want when the cluster serves it (the
// conversion the cluster does is then the one objects get), else the cluster's storage
// version, else any served one.
func servedVersion(crd *apiextensionsv1.CustomResourceDefinition, want string) string {
	var storage, any string
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		if v.Name == want {
			return want
		}
		if v.Storage {
			storage = v.Name
		}
		any = v.Name
	}
	if storage != "" {
		return storage
	}
	return any
}

// checker validates objects against one version of a new definition.
type checker struct {
	apiVersion string
	version    string
	structural *structuralschema.Structural
	validator  apiservervalidation.SchemaValidator
	cel        *cel.Validator
}

// newChecker builds the validators of newCRD's storage version, as the API server does from a
// CRD (internal JSONSchemaProps → structural schema and OpenAPI validator).
func newChecker(crd *apiextensionsv1.CustomResourceDefinition) (*checker, error) {
	if crd == nil {
		return nil, invalid.Field("definition", "a CRD definition is missing")
	}
	var target *apiextensionsv1.CustomResourceDefinitionVersion
	for i, v := range crd.Spec.Versions {
		if v.Storage {
			target = &crd.Spec.Versions[i]
		}
	}
	if target == nil {
		return nil, invalid.Field("definition", "CRD %s has no storage version", crd.Name)
	}
	if target.Schema == nil || target.Schema.OpenAPIV3Schema == nil {
		return nil, invalid.Field("definition", "CRD %s version %s has no openAPIV3Schema", crd.Name, target.Name)
	}
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(target.Schema.OpenAPIV3Schema, internal, nil); err != nil {
		return nil, invalid.Reasoned("definition", "format", err, "CRD %s version %s: schema does not convert: %v", crd.Name, target.Name, err)
	}
	ss, err := structuralschema.NewStructural(internal)
	if err != nil {
		return nil, invalid.Reasoned("definition", "format", err, "CRD %s version %s: schema is not structural: %v", crd.Name, target.Name, err)
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(internal)
	if err != nil {
		return nil, invalid.Reasoned("definition", "format", err, "CRD %s version %s: schema does not compile: %v", crd.Name, target.Name, err)
	}
	return &checker{
		apiVersion: crd.Spec.Group + "/" + target.Name,
		version:    target.Name,
		structural: ss,
		validator:  validator,
		cel:        cel.NewValidator(ss, true, celconfig.PerCallLimit),
	}, nil
}

// check returns what is wrong with obj under the new schema; obj is not modified.
func (c *checker) check(ctx context.Context, obj *unstructured.Unstructured) []string {
	content := runtime.DeepCopyJSON(obj.UnstructuredContent())
	content["apiVersion"] = c.apiVersion
	var errs []string
	pruned := pruning.PruneWithOptions(content, c.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	sort.Strings(pruned)
	for _, p := range pruned {
		errs = append(errs, fmt.Sprintf("%s: field not declared in the new schema: its value would be dropped", p))
	}
	structuraldefaulting.Default(content, c.structural)
	var fieldErrs field.ErrorList
	fieldErrs = append(fieldErrs, apiservervalidation.ValidateCustomResource(nil, content, c.validator)...)
	fieldErrs = append(fieldErrs, listtype.ValidateListSetsAndMaps(nil, c.structural, content)...)
	if c.cel != nil {
		celErrs, _ := c.cel.Validate(ctx, nil, c.structural, content, nil, celconfig.RuntimeCELCostBudget)
		fieldErrs = append(fieldErrs, celErrs...)
	}
	for _, e := range fieldErrs {
		errs = append(errs, strings.TrimSpace(e.Error()))
	}
	return errs
}
