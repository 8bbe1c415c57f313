// Command k8sschema writes strict, standalone JSON schemas for kubeconform
// from Kubernetes' OpenAPI spec and from CustomResourceDefinitions.
//
//	k8sschema -swagger $K8S/api/openapi-spec/swagger.json \
//	    -crd servicemonitors.yaml -crd prometheusrules.yaml \
//	    -version 1.36.3 -out .tools/k8s-schemas
//
// It writes one file per kind and API version in the layout kubeconform
// reads when -schema-location names a directory:
// <out>/v<version>-standalone-strict/<kind>-<group>-<version>.json (core
// kinds: <kind>-<version>.json), the names lower-cased, the group cut at its
// first dot (deployment-apps-v1.json, networkpolicy-networking-v1.json,
// servicemonitor-monitoring-v1.json).
//
// A schema is standalone: every $ref is inlined, so kubeconform needs no
// other file. A reference back to a definition that is being inlined (only
// JSONSchemaProps refers to itself) becomes {}, which accepts anything.
//
// A schema is strict: an object with properties and no additionalProperties
// gets additionalProperties: false, so a misspelt or misplaced field is an
// error, as it is for `kubectl apply --validate=strict`. Beyond that the
// conversion follows what the API server accepts: an optional field may be
// null; an int-or-string field (format int-or-string, or
// x-kubernetes-int-or-string) takes an integer or a string; a
// resource.Quantity takes a number or a string; apiVersion and kind must be
// the ones of the file. The root metadata of a custom resource, which a CRD
// declares only as "type: object", is ObjectMeta from the OpenAPI spec.
// Descriptions and x-kubernetes-* extensions are dropped.
package main
