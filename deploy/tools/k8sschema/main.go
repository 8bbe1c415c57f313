package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "k8sschema:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("k8sschema", flag.ContinueOnError)
	var (
		swagger = fs.String("swagger", "", "Kubernetes OpenAPI v2 spec (api/openapi-spec/swagger.json of k8s.io/kubernetes); required")
		version = fs.String("version", "", "Kubernetes version the spec belongs to, e.g. 1.36.3 (kubeconform's -kubernetes-version); required")
		out     = fs.String("out", "", "output directory (kubeconform's -schema-location); required")
		crds    stringList
	)
	fs.Var(&crds, "crd", "YAML file of CustomResourceDefinitions to write schemas for (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var missing []string
	for name, v := range map[string]string{"swagger": *swagger, "version": *version, "out": *out} {
		if v == "" {
			missing = append(missing, "-"+name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("missing %s", strings.Join(missing, ", "))
	}

	files, err := generate(*swagger, crds)
	if err != nil {
		return err
	}
	dir := filepath.Join(*out, "v"+strings.TrimPrefix(*version, "v")+"-standalone-strict")
	if err := writeDir(dir, files); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "k8sschema: wrote %d schemas to %s\n", len(files), dir)
	return nil
}

// generate returns the schema files (name -> JSON) of every kind in the
// spec and in the CRD files.
func generate(swaggerPath string, crdPaths []string) (map[string][]byte, error) {
	defs, err := readDefinitions(swaggerPath)
	if err != nil {
		return nil, err
	}
	c := &converter{defs: defs}
	out := &fileSet{files: map[string][]byte{}, from: map[string]string{}}
	if err := out.addDefinitions(c); err != nil {
		return nil, err
	}
	for _, p := range crdPaths {
		if err := out.addCRDs(c, p); err != nil {
			return nil, err
		}
	}
	return out.files, nil
}

// readDefinitions reads the definitions of the OpenAPI v2 spec at path.
func readDefinitions(path string) (map[string]schema, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var spec struct {
		Definitions map[string]schema `json:"definitions"`
	}
	if err := json.Unmarshal(raw, &spec); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(spec.Definitions) == 0 {
		return nil, fmt.Errorf("%s: no definitions; want an OpenAPI v2 spec", path)
	}
	return spec.Definitions, nil
}

// fileSet is the schema files generated: files by name (JSON) and, by the
// same name, the source each came from.
type fileSet struct {
	files map[string][]byte
	from  map[string]string
}

// add adds the file of group, version and kind with the schema s, which
// comes from source. Two sources of one file name are an error.
func (fs *fileSet) add(source, group, version, kind string, s schema) error {
	name := fileName(group, version, kind)
	if prev, ok := fs.from[name]; ok {
		return fmt.Errorf("%s and %s both map to %s", prev, source, name)
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("%s: %w", source, err)
	}
	fs.files[name] = append(b, '\n')
	fs.from[name] = source
	return nil
}

// addDefinitions adds a file for every kind of the spec's definitions, in
// the order of their names.
func (fs *fileSet) addDefinitions(c *converter) error {
	names := make([]string, 0, len(c.defs))
	for n := range c.defs {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		def := c.defs[n]
		for _, gvk := range groupVersionKinds(def) {
			s, err := c.root(def, []string{n}, apiVersion(gvk.group, gvk.version), gvk.kind)
			if err != nil {
				return fmt.Errorf("%s: %w", n, err)
			}
			source := n + " (" + apiVersion(gvk.group, gvk.version) + ")"
			if err := fs.add(source, gvk.group, gvk.version, gvk.kind, s); err != nil {
				return err
			}
		}
	}
	return nil
}

// addCRDs adds a file for every served version with a schema of the CRDs
// in the file at path.
func (fs *fileSet) addCRDs(c *converter, path string) error {
	docs, err := readCRDs(path)
	if err != nil {
		return err
	}
	for _, crd := range docs {
		for _, v := range crd.Spec.Versions {
			if !v.Served || v.Schema.OpenAPIV3Schema == nil {
				continue
			}
			source := fmt.Sprintf("%s: %s %s", path, crd.Metadata.Name, v.Name)
			s, err := c.root(v.Schema.OpenAPIV3Schema, nil, apiVersion(crd.Spec.Group, v.Name), crd.Spec.Names.Kind)
			if err != nil {
				return fmt.Errorf("%s: %w", source, err)
			}
			if err := fs.add(source, crd.Spec.Group, v.Name, crd.Spec.Names.Kind, s); err != nil {
				return err
			}
		}
	}
	return nil
}

type gvk struct{ group, version, kind string }

// groupVersionKinds reads a definition's x-kubernetes-group-version-kind.
func groupVersionKinds(def schema) []gvk {
	list, _ := def["x-kubernetes-group-version-kind"].([]any)
	var out []gvk
	for _, e := range list {
		m, _ := e.(map[string]any)
		g, _ := m["group"].(string)
		v, _ := m["version"].(string)
		k, _ := m["kind"].(string)
		if v != "" && k != "" {
			out = append(out, gvk{g, v, k})
		}
	}
	return out
}

// crd is the part of a CustomResourceDefinition the generator reads.
type crd struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Spec struct {
		Group string `yaml:"group"`
		Names struct {
			Kind string `yaml:"kind"`
		} `yaml:"names"`
		Versions []struct {
			Name   string `yaml:"name"`
			Served bool   `yaml:"served"`
			Schema struct {
				OpenAPIV3Schema schema `yaml:"openAPIV3Schema"`
			} `yaml:"schema"`
		} `yaml:"versions"`
	} `yaml:"spec"`
}

// readCRDs reads the CustomResourceDefinitions of a YAML file; other
// documents in it are an error.
func readCRDs(path string) ([]crd, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	var out []crd
	for i := 0; ; i++ {
		var c crd
		err := dec.Decode(&c)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", path, i+1, err)
		}
		if c.Kind == "" {
			continue // an empty document
		}
		if c.Kind != "CustomResourceDefinition" {
			return nil, fmt.Errorf("%s: document %d is a %s, not a CustomResourceDefinition", path, i+1, c.Kind)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no CustomResourceDefinition", path)
	}
	return out, nil
}

// writeDir replaces dir with the files, through a temporary directory
// beside it so that an interrupted run leaves the old schemas whole.
func writeDir(dir string, files map[string][]byte) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".k8sschema-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
			return err
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return os.Rename(tmp, dir)
}
