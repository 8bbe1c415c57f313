package main

import (
	"fmt"
	"slices"
	"strings"
)

// schema is one JSON (or OpenAPI) schema object.
type schema = map[string]any

const (
	refPrefix     = "#/definitions/"
	quantityDef   = "io.k8s.apimachinery.pkg.api.resource.Quantity"
	objectMetaDef = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
)

// converter turns OpenAPI schemas into strict, standalone JSON schemas.
type converter struct {
	// defs are the OpenAPI spec's definitions by name; $refs point into it.
	defs map[string]schema
}

// intOrString is what an int-or-string field accepts.
func intOrString() schema {
	return schema{"oneOf": []any{schema{"type": "string"}, schema{"type": "integer"}}}
}

// quantity is what a resource.Quantity accepts: "500m", "1Gi", 2, 0.5.
func quantity() schema {
	return schema{"oneOf": []any{schema{"type": "string"}, schema{"type": "number"}}}
}

// convert returns the JSON schema of s with every $ref inlined. stack holds
// the definitions being inlined, to cut cycles; nullable says whether the
// value may be null (an optional field).
func (c *converter) convert(s schema, stack []string, nullable bool) (schema, error) {
	if ref, ok := s["$ref"].(string); ok {
		return c.ref(ref, stack, nullable)
	}
	if s["format"] == "int-or-string" || (s["x-kubernetes-int-or-string"] == true && s["anyOf"] == nil && s["oneOf"] == nil) {
		return allowNull(intOrString(), nullable), nil
	}
	if s["nullable"] == true {
		nullable = true
	}
	out := schema{}
	for k, v := range s {
		var err error
		switch {
		case k == "description", k == "nullable", strings.HasPrefix(k, "x-"):
			// Documentation and Kubernetes extensions: not validation.
		case k == "properties":
			out[k], err = c.properties(v, stack, requiredSet(s))
		case k == "items", k == "not", k == "additionalProperties":
			sub, ok := v.(map[string]any)
			if !ok {
				out[k] = v // additionalProperties: true or false
				continue
			}
			if out[k], err = c.convert(sub, stack, false); err != nil {
				err = fmt.Errorf("%s: %w", k, err)
			}
		case k == "allOf", k == "anyOf", k == "oneOf":
			out[k], err = c.list(k, v, stack)
		default:
			out[k] = v
		}
		if err != nil {
			return nil, err
		}
	}
	_, hasProps := out["properties"]
	_, hasAdditional := out["additionalProperties"]
	if hasProps && !hasAdditional && s["x-kubernetes-preserve-unknown-fields"] != true {
		out["additionalProperties"] = false
	}
	return allowNull(out, nullable), nil
}

// ref returns the definition that ref names, converted, or an empty schema
// (anything) when it is already being inlined in stack.
func (c *converter) ref(ref string, stack []string, nullable bool) (schema, error) {
	name, found := strings.CutPrefix(ref, refPrefix)
	if !found {
		return nil, fmt.Errorf("$ref %q: only %s... references are supported", ref, refPrefix)
	}
	if slices.Contains(stack, name) {
		return schema{}, nil // a cycle: accept anything below this point
	}
	if name == quantityDef {
		return allowNull(quantity(), nullable), nil
	}
	def, ok := c.defs[name]
	if !ok {
		return nil, fmt.Errorf("$ref %q: no such definition", ref)
	}
	out, err := c.convert(def, append(stack, name), nullable)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

// requiredSet is the set of property names s lists as required.
func requiredSet(s schema) map[string]bool {
	required := map[string]bool{}
	if rs, ok := s["required"].([]any); ok {
		for _, r := range rs {
			if name, ok := r.(string); ok {
				required[name] = true
			}
		}
	}
	return required
}

// properties converts the value v of properties; a property not in
// required may be null.
func (c *converter) properties(v any, stack []string, required map[string]bool) (schema, error) {
	props, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("properties: want an object, got %T", v)
	}
	conv := make(schema, len(props))
	for name, p := range props {
		ps, ok := p.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("properties.%s: want an object, got %T", name, p)
		}
		cp, err := c.convert(ps, stack, !required[name])
		if err != nil {
			return nil, fmt.Errorf("properties.%s: %w", name, err)
		}
		conv[name] = cp
	}
	return conv, nil
}

// list converts the value v of k, a list of schemas (allOf, anyOf, oneOf).
func (c *converter) list(k string, v any, stack []string) ([]any, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s: want a list, got %T", k, v)
	}
	conv := make([]any, 0, len(list))
	for i, e := range list {
		es, ok := e.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s[%d]: want an object, got %T", k, i, e)
		}
		cs, err := c.convert(es, stack, false)
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", k, i, err)
		}
		conv = append(conv, cs)
	}
	return conv, nil
}

// allowNull lets s also accept null when nullable is set: a null optional
// field is the same as an absent one to the API server.
func allowNull(s schema, nullable bool) schema {
	if !nullable {
		return s
	}
	switch t := s["type"].(type) {
	case string:
		s["type"] = []any{t, "null"}
		return s
	case []any:
		if !slices.Contains(t, any("null")) {
			s["type"] = append(slices.Clone(t), "null")
		}
		return s
	}
	for _, k := range []string{"oneOf", "anyOf"} {
		if list, ok := s[k].([]any); ok {
			s[k] = append(list, schema{"type": "null"})
			return s
		}
	}
	return s // no type: anything, null included
}

// root converts the schema of a kind: apiVersion and kind must be the ones
// given, and metadata is ObjectMeta (when the spec has it and s leaves
// metadata open, as a CRD does).
func (c *converter) root(s schema, stack []string, apiVersion, kind string) (schema, error) {
	out, err := c.convert(s, stack, false)
	if err != nil {
		return nil, err
	}
	props, _ := out["properties"].(schema)
	if props == nil {
		props = schema{}
		out["properties"] = props
	}
	props["apiVersion"] = schema{"type": "string", "enum": []any{apiVersion}}
	props["kind"] = schema{"type": "string", "enum": []any{kind}}
	if md, ok := props["metadata"].(schema); ok && md["properties"] == nil {
		if _, ok := c.defs[objectMetaDef]; ok {
			meta, err := c.convert(schema{"$ref": refPrefix + objectMetaDef}, nil, false)
			if err != nil {
				return nil, fmt.Errorf("metadata: %w", err)
			}
			props["metadata"] = meta
		}
	}
	if _, ok := out["additionalProperties"]; !ok {
		out["additionalProperties"] = false
	}
	return out, nil
}

// fileName is the name kubeconform looks for: the kind, then the first part
// of the group (none for the core group), then the version, lower-cased.
func fileName(group, version, kind string) string {
	suffix := "-" + strings.ToLower(version)
	if group != "" {
		first, _, _ := strings.Cut(group, ".")
		suffix = "-" + strings.ToLower(first) + suffix
	}
	return strings.ToLower(kind) + suffix + ".json"
}

// apiVersion is group/version, or version alone for the core group.
func apiVersion(group, version string) string {
	if group == "" {
		return version
	}
	return group + "/" + version
}
