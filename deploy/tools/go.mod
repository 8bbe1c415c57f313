module github.com/hourglass/hourglass/deploy/tools

go 1.26.0

require go.yaml.in/yaml/v3 v3.0.5
