package api

import (
	_ "embed"
	"net/http"
)

// openAPIDocument describes every route (checked by TestOpenAPI).
//
//go:embed openapi.json
var openAPIDocument []byte

// OpenAPI returns the OpenAPI 3 document of the API.
func OpenAPI() []byte { return append([]byte(nil), openAPIDocument...) }

func (s *Server) openAPI(*http.Request) (int, any, error) {
	return http.StatusOK, rawJSON(openAPIDocument), nil
}

// rawJSON is JSON sent as it is.
type rawJSON []byte

func (r rawJSON) MarshalJSON() ([]byte, error) { return r, nil }
