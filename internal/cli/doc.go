// Package cli builds command-line flag sets whose flags fall back to an
// environment variable.
//
// A flag has an environment variable or it has none, and the help says
// which: [FlagSet.Usage] shows each flag with "env HOURGLASS_MAX_DELAY" or
// with "no env". Service flags, which Helm charts and scripts set, have one
// named by [Env]; flags of one-off commands (a report window, a dry run) may
// have none.
//
// The help begins with what a user needs first: the usage line, what the
// command does, then the [Essential] flags, then the others in the sections
// the command names ([FlagSet.Section], [FlagSet.Move]), wrapped to the
// terminal's width (COLUMNS, else 80), defaults in the units users think in
// (365d, 32 MiB). Durations take days besides Go's units (7d, 1d12h; see
// [ParseDuration]), and byte counts take sizes (32MiB).
//
// Precedence is flag, then environment, then default: a flag given on the
// command line always wins; otherwise a non-empty environment variable is
// used; otherwise the flag keeps the default it was registered with. An
// environment variable that is set but empty counts as unset, so a Helm chart
// or a shell script can leave a variable blank to mean "use the default".
//
// Both -flag and --flag spellings are accepted; errors always use --flag. A
// bad command line is a [CommandLineError] that ends with where to look
// (`see router --help`): an unknown flag, with the closest flag if one is
// close (`unknown flag --tier; did you mean --tiers?`, see internal/suggest), a
// flag without its value, a value that does not parse. Errors name where a
// bad value came from: `--max-delay: "abc" is not a duration; want ...` for
// a flag, and `HOURGLASS_MAX_DELAY (--max-delay): "abc" is not a duration;
// want ...` for an environment variable. [FlagSet.Name] gives the same kind of name for use in
// a command's own validation messages, and [FlagSet.PrintConfig] shows every
// effective value with where it came from, masking secrets.
//
// A command collects its problems in [Problems], one [FlagError] a flag,
// and turns those of a library Config, which name Go fields
// (internal/field), into flag problems through its [Fields] table; then
// [FlagSet.Explain] writes them all, one a line, each with its variable.
// Only the commands import this package.
//
// It is not built on a flag library because none gives what the commands
// promise without more glue than this: stdlib flag (and peterbourgon/ff on
// it) stops at the first bad value, prints its own errors and help, takes
// no argument between flags and suggests nothing; ff's environment errors
// come one at a time; pflag (cobra) reads -tier as shorthand flags, and
// kong neither takes -flag nor reports every problem at once. Each would
// still need the usage with its variables, the sources for --check-config
// and the "did you mean" written here.
package cli
