package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3gen"
	"github.com/slipway-dev/slipway/internal/manager/api"
)

// APIVersion is the version of the API in the OpenAPI document.
const APIVersion = "1.0.0"

var pathParam = regexp.MustCompile(`\{([a-zA-Z]+)\}`)

// buildOpenAPI turns the route table into an OpenAPI 3 document: the document and the routes
// come from one list, so they cannot drift (and a test checks the served routes both ways).
func (s *Server) buildOpenAPI() ([]byte, error) {
	doc := &openapi3.T{
		OpenAPI: "3.0.3",
		Info: &openapi3.Info{Title: "slipway operator manager", Version: APIVersion,
			Description: "Registers clusters and operators (Helm charts) and checks CRD compatibility. " +
				"Every route but /health needs a JWT (Authorization: Bearer)."},
		Paths: openapi3.NewPaths(),
		Components: &openapi3.Components{
			Schemas: openapi3.Schemas{},
			SecuritySchemes: openapi3.SecuritySchemes{
				"bearer": &openapi3.SecuritySchemeRef{Value: openapi3.NewJWTSecurityScheme()},
			},
			Responses: openapi3.ResponseBodies{},
		},
	}
	errSchema, err := schemaFor(api.Error{})
	if err != nil {
		return nil, err
	}
	doc.Components.Schemas["Error"] = errSchema
	errRef := openapi3.NewSchemaRef("#/components/schemas/Error", errSchema.Value)
	for _, rt := range s.routes() {
		op := openapi3.NewOperation()
		op.Summary = rt.Summary
		op.OperationID = operationID(rt)
		for _, m := range pathParam.FindAllStringSubmatch(rt.Pattern, -1) {
			op.AddParameter(openapi3.NewPathParameter(m[1]).WithSchema(openapi3.NewStringSchema()))
		}
		for _, q := range rt.Query {
			sch := openapi3.NewStringSchema()
			for _, e := range q.Enum {
				sch.Enum = append(sch.Enum, e)
			}
			p := openapi3.NewQueryParameter(q.Name).WithSchema(sch)
			p.Description = q.Description
			op.AddParameter(p)
		}
		if rt.Request != nil {
			sch, err := schemaFor(rt.Request)
			if err != nil {
				return nil, fmt.Errorf("%s %s request: %w", rt.Method, rt.Pattern, err)
			}
			op.RequestBody = &openapi3.RequestBodyRef{Value: openapi3.NewRequestBody().WithRequired(!rt.BodyOptional).WithJSONSchemaRef(sch)}
		}
		status := rt.Status
		if status == 0 {
			status = http.StatusOK
		}
		ok := openapi3.NewResponse().WithDescription(http.StatusText(status))
		if rt.Response != nil {
			sch, err := schemaFor(rt.Response)
			if err != nil {
				return nil, fmt.Errorf("%s %s response: %w", rt.Method, rt.Pattern, err)
			}
			ok = ok.WithJSONSchemaRef(sch)
		}
		op.AddResponse(status, ok)
		if rt.AlsoOK != nil {
			sch, err := schemaFor(rt.AlsoOK)
			if err != nil {
				return nil, fmt.Errorf("%s %s response: %w", rt.Method, rt.Pattern, err)
			}
			op.AddResponse(http.StatusOK, openapi3.NewResponse().WithDescription(http.StatusText(http.StatusOK)).WithJSONSchemaRef(sch))
		}
		for _, code := range errorStatuses(rt) {
			op.AddResponse(code, openapi3.NewResponse().WithDescription(http.StatusText(code)).WithJSONSchemaRef(errRef))
		}
		if rt.Public {
			op.Security = openapi3.NewSecurityRequirements()
		} else {
			op.Security = openapi3.NewSecurityRequirements().With(openapi3.NewSecurityRequirement().Authenticate("bearer"))
			roles := make([]string, len(rt.Roles))
			for i, r := range rt.Roles {
				roles[i] = string(r)
			}
			op.Description = "Roles: " + strings.Join(roles, ", ") + "."
			if rt.AnyCaller {
				op.Description = "Any caller with a token the manager accepts, with or without a role."
			}
		}
		doc.AddOperation(rt.Pattern, rt.Method, op)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("the OpenAPI document is invalid: %w", err)
	}
	return json.MarshalIndent(doc, "", "  ")
}

func operationID(rt route) string {
	parts := []string{strings.ToLower(rt.Method)}
	for _, seg := range strings.Split(strings.TrimPrefix(rt.Pattern, "/api/v1"), "/") {
		seg = strings.Trim(seg, "{}")
		seg = strings.TrimSuffix(seg, ".json")
		if seg != "" {
			parts = append(parts, strings.ToUpper(seg[:1])+seg[1:])
		}
	}
	return strings.Join(parts, "")
}

// errorStatuses lists the error answers a route can give.
func errorStatuses(rt route) []int {
	codes := []int{http.StatusInternalServerError}
	if rt.Public {
		codes = append(codes, http.StatusServiceUnavailable)
		if rt.Request != nil {
			codes = append(codes, http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType)
		}
		if rt.ClientLimit {
			codes = append(codes, http.StatusTooManyRequests)
		}
		return append(codes, rt.Errors...)
	}
	codes = append(codes, http.StatusUnauthorized, http.StatusTooManyRequests)
	if !rt.AnyCaller {
		codes = append(codes, http.StatusForbidden)
	}
	if rt.Request != nil || len(rt.Query) > 0 {
		codes = append(codes, http.StatusBadRequest)
	}
	if rt.Request != nil {
		codes = append(codes, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType)
	}
	if strings.Contains(rt.Pattern, "{") {
		codes = append(codes, http.StatusNotFound)
	}
	if rt.Conflict || (rt.Method == http.MethodPost && rt.Status == http.StatusCreated) {
		codes = append(codes, http.StatusConflict)
	}
	return append(codes, rt.Errors...)
}

var (
	rawMessageType          = reflect.TypeOf(json.RawMessage{})
	optionalCredentialsType = reflect.TypeOf(api.OptionalCredentials{})
)

// schemaFor generates the JSON schema of a Go type from its json tags (a description tag
// describes the field, an enum tag lists its values, comma-separated); json.RawMessage fields
// accept any JSON (a CRD definition: an object or YAML text; Helm values: an object).
func schemaFor(v any) (*openapi3.SchemaRef, error) {
	return openapi3gen.NewSchemaRefForValue(v, nil, openapi3gen.SchemaCustomizer(
		func(name string, t reflect.Type, tag reflect.StructTag, schema *openapi3.Schema) error {
			if t == rawMessageType {
				desc := "a JSON object"
				if name == "definition" {
					desc = "a CustomResourceDefinition: a JSON object, or YAML text as a string"
				}
				*schema = openapi3.Schema{Description: desc}
			}
			if t == optionalCredentialsType {
				// PATCH's credentials: an object as at registration, or null to remove them.
				ref, err := schemaFor(api.ChartCredentials{})
				if err != nil {
					return err
				}
				*schema = *ref.Value
				schema.Nullable = true
				schema.Description = "new credentials (username and password, or token); null removes them; left out keeps them"
			}
			if d := tag.Get("description"); d != "" {
				schema.Description = d
			}
			if e := tag.Get("enum"); e != "" {
				for _, v := range strings.Split(e, ",") {
					schema.Enum = append(schema.Enum, v)
				}
			}
			return nil
		}))
}
