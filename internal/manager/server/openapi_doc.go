package server

// OpenAPI is the OpenAPI 3 document the server serves at /api/v1/openapi.json, built from the route
// table alone (no store, no services): `manager openapi` prints it, and api/manager/openapi.json is
// it committed (make generate).
func OpenAPI() ([]byte, error) {
	return (&Server{}).buildOpenAPI()
}
