package flags

import (
	"strings"

	"github.com/hourglass/hourglass/internal/cli"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// Group is the default consumer group of a service, component ("router",
// "canceller", "recorder"), under the topic prefix prefix:
// hourglass-<component> for the default prefix, the name deployments
// have committed their offsets under, and <prefix>-<component> for
// another, its trailing dots, dashes and underscores cut (nc. gives
// nc-router), so that two pipelines with their own prefixes on one cluster
// do not share groups. An empty prefix gives the component alone.
func Group(prefix, component string) string {
	if prefix == tiers.DefaultPrefix {
		return "hourglass-" + component
	}
	p := strings.TrimRight(prefix, ".-_")
	if p == "" {
		return component
	}
	return p + "-" + component
}

// DefaultGroup sets *group, the value of fs's --group, to Group(prefix,
// component) when neither --group nor its environment variable was given;
// call it after fs.Parse. A --group given empty stays empty, for the
// service's validation to report.
func DefaultGroup(fs *cli.FlagSet, group *string, prefix, component string) {
	if fs.Source("group") == cli.SourceDefault {
		*group = Group(prefix, component)
	}
}

// GroupUsage is the usage of a service's --group flag.
func GroupUsage(component string) string {
	return "consumer `group` (default hourglass-" + component + ", or <prefix>-" + component + " for another --topic-prefix: nc. gives nc-" + component + ")"
}
