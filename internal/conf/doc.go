// Package conf holds the pieces of closer configuration files that every
// closer shares: secrets taken from the environment or a file, and TLS
// client settings. Both decode from YAML.
package conf
