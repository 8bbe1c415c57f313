package cli

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// Sources reported by [FlagSet.Source] and [FlagSet.PrintConfig].
const (
	// SourceFlag means the value was given on the command line.
	SourceFlag = "flag"
	// SourceEnv means the value came from the flag's environment variable.
	SourceEnv = "env"
	// SourceDefault means neither was given: the registered default is in
	// effect.
	SourceDefault = "default"
)

// FlagSet is a set of command-line flags, each with an optional environment
// variable fallback. Flags win over env; env wins over the default.
//
// Register flags with the *Var methods, then call [FlagSet.Parse] once. The
// zero value is not usable; create one with [NewFlagSet]. Registering the
// same flag name twice panics, as it does with the flag package.
type FlagSet struct {
	name    string // the command, for the hint of a *CommandLineError
	header  string
	out     io.Writer
	entries []*entry // in registration order, which Usage and PrintConfig keep
	byName  map[string]*entry

	// sections are the titles of Usage's sections in order, Essential
	// aside; section is that of the flags registered next ("" for none).
	sections []string
	section  string
	// essential are the flags of the Essential section, in the order given.
	essential []*entry

	// lookupEnv reads the environment; os.LookupEnv unless a test replaces it.
	lookupEnv func(string) (string, bool)
	// args are the arguments after the flags, set by Parse.
	args []string
	// interspersed lets arguments that are not flags come between flags.
	interspersed bool
}

// entry is one registered flag.
type entry struct {
	name   string
	env    string // "" means no environment fallback
	usage  string // with any `placeholder` backquotes removed
	arg    string // placeholder for the value in Usage; "" for bool flags
	def    string // default as shown in Usage; "" shows none
	val    value
	source string
	// section is the title of the section Usage shows the flag in; ""
	// for none, and Essential is not one: see FlagSet.Essential.
	section   string
	essential bool
}

// value is a typed destination for one flag.
type value interface {
	// parse stores s in the destination or returns the bare reason it
	// cannot, such as `"abc" is not a duration`.
	parse(s string) error
	// String formats the current value.
	String() string
}

// Env returns the environment variable of a flag by Hourglass's convention:
// HOURGLASS_ and the flag's name in upper case with dashes as underscores
// ("max-delay" is HOURGLASS_MAX_DELAY).
func Env(name string) string {
	return "HOURGLASS_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// NewFlagSet returns an empty FlagSet for the command name, as a user types
// it ("router", "hourglass dlq list"): errors about the command line point
// to `name --help`. Its errors are returned by Parse, never printed or acted
// on; Usage writes usageHeader and the flag list to os.Stderr unless
// SetOutput changes that.
func NewFlagSet(name, usageHeader string) *FlagSet {
	return &FlagSet{
		name:      name,
		header:    usageHeader,
		out:       os.Stderr,
		byName:    make(map[string]*entry),
		lookupEnv: os.LookupEnv,
	}
}

// SetOutput sets where Usage writes; nil restores the default, os.Stderr.
func (f *FlagSet) SetOutput(w io.Writer) {
	if w == nil {
		w = os.Stderr
	}
	f.out = w
}

// Output returns where Usage writes.
func (f *FlagSet) Output() io.Writer { return f.out }

func (f *FlagSet) add(name, env, usage, defArg, def string, v value) {
	if _, dup := f.byName[name]; dup {
		panic(fmt.Sprintf("cli: flag redefined: %s", name))
	}
	arg, usage := flag.UnquoteUsage(&flag.Flag{Usage: usage})
	if arg == "" || arg == "value" {
		arg = defArg
	}
	if _, isBool := v.(*boolValue); isBool {
		arg = ""
	}
	if iv, isInt := v.(*intValue); isInt && countsBytes(name, arg) {
		v = (*bytesValue)(iv)
		def = FormatBytes(int(*iv))
	}
	e := &entry{name: name, env: env, usage: usage, arg: arg, def: def, val: v, source: SourceDefault, section: f.section}
	f.entries = append(f.entries, e)
	f.byName[name] = e
}

// countsBytes reports whether an int flag counts bytes: its name ends in
// "bytes" (--max-key-bytes) or has "-bytes-" (--max-held-bytes-per-partition),
// or its value placeholder is `bytes`.
func countsBytes(name, arg string) bool {
	return arg == "bytes" || strings.HasSuffix(name, "bytes") || strings.Contains(name, "-bytes-")
}

// StringVar defines a string flag --name with environment fallback env (""
// for none) and default def, stored in *p. A word in backquotes in usage is
// shown as the value placeholder, as with the flag package.
func (f *FlagSet) StringVar(p *string, name, env string, def string, usage string) {
	*p = def
	f.add(name, env, usage, "string", def, (*stringValue)(p))
}

// IntVar defines an int flag; see StringVar. A flag that counts bytes (its
// name ends in "bytes" or its placeholder is `bytes`) also takes sizes such
// as 32MiB, and Usage shows its default that way (32 MiB; see FormatBytes).
func (f *FlagSet) IntVar(p *int, name, env string, def int, usage string) {
	*p = def
	f.add(name, env, usage, "int", strconv.Itoa(def), (*intValue)(p))
}

// Float64Var defines a float64 flag; see StringVar.
func (f *FlagSet) Float64Var(p *float64, name, env string, def float64, usage string) {
	*p = def
	f.add(name, env, usage, "number", strconv.FormatFloat(def, 'g', -1, 64), (*floatValue)(p))
}

// BoolVar defines a bool flag; see StringVar. On the command line it takes no
// value (--tls) or an attached one (--tls=false); from the environment it
// takes anything strconv.ParseBool accepts. A false default is not shown in
// Usage.
func (f *FlagSet) BoolVar(p *bool, name, env string, def bool, usage string) {
	*p = def
	shown := ""
	if def {
		shown = "true"
	}
	f.add(name, env, usage, "", shown, (*boolValue)(p))
}

// DurationVar defines a time.Duration flag in Go syntax (500ms, 1m30s) or
// with days (7d, 1d12h, 1.5d; see ParseDuration); see StringVar. Usage shows
// the default as FormatDuration does (365d, 1m30s).
func (f *FlagSet) DurationVar(p *time.Duration, name, env string, def time.Duration, usage string) {
	*p = def
	f.add(name, env, usage, "duration", FormatDuration(def), (*durationValue)(p))
}

// StringsVar defines a comma-separated list flag; see StringVar. Items are
// trimmed of spaces and empty items are dropped, so "a, ,b," is [a b]. The
// first use on the command line replaces the default; repeating the flag
// appends (--brokers a --brokers b is [a b]). *p gets a copy of def.
func (f *FlagSet) StringsVar(p *[]string, name, env string, def []string, usage string) {
	*p = append([]string(nil), def...)
	f.add(name, env, usage, "a,b,...", strings.Join(def, ","), &stringsValue{p: p})
}

// Source reports where the value of flag name came from: SourceFlag ("flag"),
// SourceEnv ("env") or SourceDefault ("default"). Before Parse every flag is
// "default". It returns "" for a name that was never registered.
func (f *FlagSet) Source(name string) string {
	if e, ok := f.byName[name]; ok {
		return e.source
	}
	return ""
}

// Name returns how to refer to flag name in a message: "--max-delay
// (HOURGLASS_MAX_DELAY)", or "--max-delay" if it has no environment variable
// or was never registered.
func (f *FlagSet) Name(name string) string {
	if e, ok := f.byName[name]; ok && e.env != "" {
		return "--" + name + " (" + e.env + ")"
	}
	return "--" + name
}

// Args returns the arguments left after the flags.
func (f *FlagSet) Args() []string { return f.args }
