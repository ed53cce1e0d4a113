package httpapi

import (
	"encoding"
	"encoding/json"
	"net/http"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gpuctl/gpuctl/internal/version"
)

// GET /api/v1/openapi.json: an OpenAPI 3.1 document of every route of the table, with the
// schemas of the answers reflected from their Go types (their JSON tags), so that neither the
// routes nor the fields can drift from the handlers.

// getOpenAPI serves GET /api/v1/openapi.json.
func (s *server) getOpenAPI(w http.ResponseWriter, _ *http.Request) error {
	startJSON(w, http.StatusOK)
	_, err := w.Write(s.openapi)
	return err
}

// pathParam matches a ServeMux wildcard: {name}, {name...} or {$}.
var pathParam = regexp.MustCompile(`\{([A-Za-z0-9_$]*)(\.\.\.)?\}`)

// splitPattern returns the method ("" for any) and the OpenAPI path of a ServeMux pattern
// ("GET /api/v1/jobs/{jobId}", "/hooks/github"), and the names of its path parameters.
func splitPattern(pattern string) (method, path string, params []string) {
	path = patternPath(pattern)
	if i := strings.IndexByte(pattern, ' '); i >= 0 && !strings.HasPrefix(pattern, "/") {
		method = pattern[:i]
	}
	path = pathParam.ReplaceAllStringFunc(path, func(m string) string {
		name := pathParam.FindStringSubmatch(m)[1]
		if name == "$" {
			return ""
		}
		params = append(params, name)
		return "{" + name + "}"
	})
	return method, path, params
}

// openAPI writes the document of the routes.
func openAPI(routes []route) []byte {
	sc := &schemas{defs: map[string]any{}}
	paths := map[string]map[string]any{}
	for _, rt := range routes {
		method, path, names := splitPattern(rt.pattern)
		if method == "" {
			method = http.MethodPost // a webhook mounted for any method is posted to
		}
		op := map[string]any{"summary": rt.summary, "responses": sc.responses(rt)}
		var params []any
		for _, n := range names {
			params = append(params, map[string]any{"name": n, "in": "path", "required": true, "schema": map[string]any{"type": "string"}})
		}
		for _, q := range rt.query {
			params = append(params, map[string]any{"name": q.name, "in": "query", "description": q.doc, "schema": map[string]any{"type": q.typ}})
		}
		if params != nil {
			op["parameters"] = params
		}
		if rt.request != nil {
			content := map[string]any{mediaJSON: map[string]any{"schema": sc.of(reflect.TypeOf(rt.request))}}
			if _, file := rt.request.(CreateRequest); file {
				content[mediaYAML] = map[string]any{"schema": map[string]any{"type": "string", "description": "the gpuctl file itself; namespace, path and fileName as query parameters"}}
			}
			op["requestBody"] = map[string]any{"required": true, "content": content}
		}
		switch rt.access {
		case public:
			op["security"] = []any{}
		case page:
			op["security"] = []any{map[string]any{"bearer": []any{}}, map[string]any{"basic": []any{}}}
		}
		if paths[path] == nil {
			paths[path] = map[string]any{}
		}
		paths[path][strings.ToLower(method)] = op
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{"title": "gpuctl-reconciler API", "version": version.String(),
			"description": "The API of gpuctl-reconciler (docs/daemon.md). A token that is not admin sees " +
				"the jobs, logs, events, quotas and drift of the namespaces of its token file line only; pools and nodes are shared. " +
				"Writes of jobs are Git commits that the daemon makes and pushes (--git-push), in the directories of the token's namespaces."},
		"paths":    paths,
		"security": []any{map[string]any{"bearer": []any{}}},
		"components": map[string]any{
			"schemas": sc.defs,
			"securitySchemes": map[string]any{
				"bearer": map[string]any{"type": "http", "scheme": "bearer", "description": "a token of the token file"},
				"basic":  map[string]any{"type": "http", "scheme": "basic", "description": "any user name, a token as the password"},
			},
		},
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		panic("httpapi: openapi: " + err.Error()) // maps of strings and slices: cannot fail
	}
	return b
}

// responses are the answers of a route, and the JSON errors of those under /api/.
func (sc *schemas) responses(rt route) map[string]any {
	out := map[string]any{}
	for _, a := range rt.answers {
		code := strconv.Itoa(a.code)
		resp, _ := out[code].(map[string]any)
		if resp == nil {
			resp = map[string]any{"description": http.StatusText(a.code), "content": map[string]any{}}
			out[code] = resp
		}
		media := map[string]any{"schema": map[string]any{"type": "string"}}
		if a.body != nil {
			media = map[string]any{"schema": sc.of(reflect.TypeOf(a.body))}
		}
		resp["content"].(map[string]any)[a.media] = media
	}
	if strings.Contains(rt.pattern, "/api/") {
		out["default"] = map[string]any{"description": "an error: 400, 401, 403, 404, 405, 409, 413, 500 or 503",
			"content": map[string]any{mediaJSON: map[string]any{"schema": sc.of(reflect.TypeOf(Error{}))}}}
	}
	return out
}

// schemas reflects JSON Schemas from Go types; named structs become components, by
// "<package>.<Type>".
type schemas struct {
	defs map[string]any
}

var (
	timeType      = reflect.TypeOf(time.Time{})
	marshalerType = reflect.TypeOf((*json.Marshaler)(nil)).Elem()
	textType      = reflect.TypeOf((*encoding.TextMarshaler)(nil)).Elem()
)

// of is the schema of values of t as encoding/json writes them.
func (sc *schemas) of(t reflect.Type) map[string]any {
	switch {
	case t.Kind() == reflect.Pointer:
		return nullable(sc.of(t.Elem()))
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case t.Implements(marshalerType) || t.Implements(textType):
		return map[string]any{"description": "JSON of " + t.String() + " (custom encoding)"}
	}
	switch t.Kind() {
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string", "contentEncoding": "base64"}
		}
		return nullable(map[string]any{"type": "array", "items": sc.of(t.Elem())})
	case reflect.Map:
		return nullable(map[string]any{"type": "object", "additionalProperties": sc.of(t.Elem())})
	case reflect.Struct:
		if t.Name() == "" {
			return sc.object(t)
		}
		name := t.String() // "cluster.JobList"
		if _, done := sc.defs[name]; !done {
			sc.defs[name] = nil // a type that refers to itself
			sc.defs[name] = sc.object(t)
		}
		return map[string]any{"$ref": "#/components/schemas/" + name}
	}
	return map[string]any{} // an interface: any JSON value
}

// nullable lets a schema be null too, as a nil pointer, slice or map is written.
func nullable(s map[string]any) map[string]any {
	if typ, ok := s["type"].(string); ok {
		s["type"] = []string{typ, "null"}
		return s
	}
	return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
}

// object is the schema of a struct: its JSON fields, those of embedded structs inlined (a
// field of the outer struct shadows an embedded one of the same name).
func (sc *schemas) object(t reflect.Type) map[string]any {
	props := map[string]any{}
	var required []string
	sc.fields(t, props, &required)
	out := map[string]any{"type": "object", "properties": props}
	if required != nil {
		out["required"] = required
	}
	return out
}

func (sc *schemas) fields(t reflect.Type, props map[string]any, required *[]string) {
	var embedded []reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			embedded = append(embedded, ft)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, shadowed := props[name]; shadowed {
			continue
		}
		props[name] = sc.of(f.Type)
		if !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") {
			*required = append(*required, name)
		}
	}
	for _, e := range embedded {
		sc.fields(e, props, required)
	}
}
