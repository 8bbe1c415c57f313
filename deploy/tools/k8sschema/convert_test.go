package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// js parses a JSON literal of a test case.
func js(t *testing.T, s string) schema {
	t.Helper()
	var m schema
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	return m
}

var testDefs = `{
  "io.k8s.apimachinery.pkg.api.resource.Quantity": {"type": "string"},
  "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {"type": "string", "format": "int-or-string"},
  "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {
    "type": "object",
    "properties": {"name": {"type": "string"}, "labels": {"type": "object", "additionalProperties": {"type": "string"}}}
  },
  "node": {
    "type": "object",
    "properties": {"child": {"$ref": "#/definitions/node"}, "value": {"type": "integer"}}
  }
}`

func TestConvert(t *testing.T) {
	c := &converter{}
	if err := json.Unmarshal([]byte(testDefs), &c.defs); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		in       string
		nullable bool
		want     string
	}{
		{
			name: "object with properties becomes strict; optional fields may be null",
			in:   `{"type": "object", "description": "d", "required": ["a"], "properties": {"a": {"type": "string"}, "b": {"type": "integer", "format": "int32"}}}`,
			want: `{"type": "object", "required": ["a"], "additionalProperties": false,
			        "properties": {"a": {"type": "string"}, "b": {"type": ["integer", "null"], "format": "int32"}}}`,
		},
		{
			name: "a map keeps its additionalProperties",
			in:   `{"type": "object", "additionalProperties": {"type": "string"}}`,
			want: `{"type": "object", "additionalProperties": {"type": "string"}}`,
		},
		{
			name: "preserve-unknown-fields stays open",
			in:   `{"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {"a": {"type": "string"}}}`,
			want: `{"type": "object", "properties": {"a": {"type": ["string", "null"]}}}`,
		},
		{
			name: "int-or-string by format",
			in:   `{"$ref": "#/definitions/io.k8s.apimachinery.pkg.util.intstr.IntOrString"}`,
			want: `{"oneOf": [{"type": "string"}, {"type": "integer"}]}`,
		},
		{
			name:     "int-or-string by extension, nullable",
			in:       `{"x-kubernetes-int-or-string": true}`,
			nullable: true,
			want:     `{"oneOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]}`,
		},
		{
			name: "quantity takes numbers",
			in:   `{"type": "object", "additionalProperties": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.api.resource.Quantity"}}`,
			want: `{"type": "object", "additionalProperties": {"oneOf": [{"type": "string"}, {"type": "number"}]}}`,
		},
		{
			name: "OpenAPI v3 nullable",
			in:   `{"type": "string", "nullable": true}`,
			want: `{"type": ["string", "null"]}`,
		},
		{
			name: "a cycle is cut",
			in:   `{"$ref": "#/definitions/node"}`,
			want: `{"type": "object", "additionalProperties": false,
			        "properties": {"value": {"type": ["integer", "null"]}, "child": {}}}`,
		},
		{
			name: "items and combinators are converted",
			in:   `{"type": "array", "items": {"type": "object", "properties": {"x-kubernetes-a": {"type": "string"}}, "x-kubernetes-list-type": "map"}, "anyOf": [{"type": "array"}]}`,
			want: `{"type": "array", "items": {"type": "object", "additionalProperties": false, "properties": {"x-kubernetes-a": {"type": ["string", "null"]}}}, "anyOf": [{"type": "array"}]}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := c.convert(js(t, tc.in), nil, tc.nullable)
			if err != nil {
				t.Fatal(err)
			}
			// Compare through JSON: json.Unmarshal and the converter build
			// the same types only after a round trip.
			gotJSON, _ := json.Marshal(got)
			wantJSON, _ := json.Marshal(js(t, tc.want))
			if !bytes.Equal(gotJSON, wantJSON) {
				t.Errorf("convert(%s)\n got %s\nwant %s", tc.in, gotJSON, wantJSON)
			}
		})
	}
}

func TestConvertErrors(t *testing.T) {
	c := &converter{defs: map[string]schema{}}
	for _, tc := range []struct {
		in   string
		want string
	}{
		{in: `{"$ref": "#/definitions/missing"}`, want: `$ref "#/definitions/missing": no such definition`},
		{in: `{"$ref": "other.json#/x"}`, want: "only #/definitions/... references are supported"},
		{in: `{"properties": {"a": {"$ref": "#/definitions/missing"}}}`, want: "properties.a: "},
	} {
		_, err := c.convert(js(t, tc.in), nil, false)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("convert(%s) = %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
}

func TestFileName(t *testing.T) {
	for _, tc := range []struct {
		group, version, kind string
		want                 string
	}{
		{"", "v1", "Service", "service-v1.json"},
		{"apps", "v1", "Deployment", "deployment-apps-v1.json"},
		{"networking.k8s.io", "v1", "NetworkPolicy", "networkpolicy-networking-v1.json"},
		{"autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscaler-autoscaling-v2.json"},
		{"monitoring.coreos.com", "v1", "PrometheusRule", "prometheusrule-monitoring-v1.json"},
	} {
		if got := fileName(tc.group, tc.version, tc.kind); got != tc.want {
			t.Errorf("fileName(%q, %q, %q) = %q, want %q", tc.group, tc.version, tc.kind, got, tc.want)
		}
	}
}

// TestRun generates schemas from a small spec and a CRD and checks the
// files, their apiVersion and kind, and the ObjectMeta given to the custom
// resource.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	spec := `{"definitions": ` + strings.Replace(testDefs, `"node": {`, `"io.k8s.api.core.v1.ConfigMap": {
    "type": "object",
    "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
      "metadata": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"},
      "data": {"type": "object", "additionalProperties": {"type": "string"}}},
    "x-kubernetes-group-version-kind": [{"group": "", "version": "v1", "kind": "ConfigMap"}]
  },
  "node": {`, 1) + `}`
	swagger := filepath.Join(dir, "swagger.json")
	if err := os.WriteFile(swagger, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	crd := filepath.Join(dir, "crd.yaml")
	if err := os.WriteFile(crd, []byte(`---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget}
  versions:
    - name: v1
      served: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            apiVersion: {type: string}
            kind: {type: string}
            metadata: {type: object}
            spec:
              type: object
              properties:
                size: {x-kubernetes-int-or-string: true, anyOf: [{type: integer}, {type: string}]}
    - name: v0
      served: false
      schema:
        openAPIV3Schema: {type: object}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	var stdout strings.Builder
	if err := run([]string{"-swagger", swagger, "-crd", crd, "-version", "1.2.3", "-out", out}, &stdout); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "wrote 2 schemas") {
		t.Errorf("output %q, want it to say 2 schemas were written", stdout.String())
	}
	read := func(name string) schema {
		b, err := os.ReadFile(filepath.Join(out, "v1.2.3-standalone-strict", name))
		if err != nil {
			t.Fatal(err)
		}
		return js(t, string(b))
	}
	cm := read("configmap-v1.json")
	props := cm["properties"].(map[string]any)
	if got := props["apiVersion"]; !reflect.DeepEqual(got, map[string]any{"type": "string", "enum": []any{"v1"}}) {
		t.Errorf("configmap apiVersion %v", got)
	}
	if cm["additionalProperties"] != false {
		t.Errorf("configmap additionalProperties %v, want false", cm["additionalProperties"])
	}
	w := read("widget-example-v1.json")
	wprops := w["properties"].(map[string]any)
	if got := wprops["kind"]; !reflect.DeepEqual(got, map[string]any{"type": "string", "enum": []any{"Widget"}}) {
		t.Errorf("widget kind %v", got)
	}
	meta := wprops["metadata"].(map[string]any)
	if _, ok := meta["properties"].(map[string]any)["labels"]; !ok {
		t.Errorf("widget metadata %v, want ObjectMeta", meta)
	}

	if err := run([]string{"-swagger", swagger}, &stdout); err == nil || !strings.Contains(err.Error(), "missing -out, -version") {
		t.Errorf("run without -out and -version: %v", err)
	}
}
