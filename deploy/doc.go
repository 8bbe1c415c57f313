// Package deploy holds no code: its tests check what deploy/ and the image
// recipe ship.
//
//   - The Prometheus rules in prometheus/ (rules_test.go) and the Grafana
//     dashboard in grafana/ (dashboard_test.go), against promtool and
//     against the series docs/metrics.md documents (series_test.go).
//   - The Helm chart in helm/hourglass (helm_*_test.go), rendered with its
//     defaults and every ci/ values file, linted, validated strictly with
//     kubeconform against the Kubernetes and Prometheus Operator schemas,
//     and run through the image's own binary with --check-config.
//   - The image recipe, ../Dockerfile and ../.dockerignore (image_test.go),
//     without a container engine: the Dockerfile's own go build command is
//     run, and its binaries checked. The Dockerfile is read with BuildKit's
//     parser and the .dockerignore with moby's patternmatcher
//     (dockerfile_test.go), as the image build reads them.
//
// The helpers the tests share are in helpers_test.go. They run helm,
// kubeconform and promtool; a missing tool fails the test:
// scripts/k8s-tools.sh installs helm and kubeconform and generates the
// Kubernetes schemas, scripts/deps.sh installs promtool.
package deploy
