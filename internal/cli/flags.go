package cli

import (
	"errors"
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

// FlagSet is a flag.FlagSet whose flags each have an environment variable
// fallback. Flags win over env; env wins over the default.
//
// Register flags with the *Var methods, then call [FlagSet.Parse] once. The
// zero value is not usable; create one with [NewFlagSet]. Registering the
// same flag name twice panics, as it does with the flag package.
type FlagSet struct {
	fs      *flag.FlagSet
	header  string
	out     io.Writer
	entries []*entry // in registration order, which Usage and PrintConfig keep
	byName  map[string]*entry

	// lookupEnv reads the environment; os.LookupEnv unless a test replaces it.
	lookupEnv func(string) (string, bool)
	// flagErr is the first bad command-line value seen by the current Parse.
	flagErr error
}

// entry is one registered flag.
type entry struct {
	f      *FlagSet
	name   string
	env    string // "" means no environment fallback
	usage  string // with any `placeholder` backquotes removed
	arg    string // placeholder for the value in Usage; "" for bool flags
	def    string // default as shown in Usage; "" shows none
	val    value
	source string
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
// HOURGLASS_ and the flag in upper case with dashes as underscores
// ("max-delay" is HOURGLASS_MAX_DELAY).
func Env(flag string) string {
	return "HOURGLASS_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// NewFlagSet returns an empty FlagSet named name. Its errors are returned by
// Parse (flag.ContinueOnError), never printed or acted on; Usage writes
// usageHeader and the flag list to os.Stderr unless SetOutput changes that.
func NewFlagSet(name, usageHeader string) *FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	// The flag package would print its own error and usage; Parse reports
	// errors itself and prints Usage only for -h.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &FlagSet{
		fs:        fs,
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
	e := &entry{f: f, name: name, env: env, usage: usage, arg: arg, def: def, val: v, source: SourceDefault}
	f.entries = append(f.entries, e)
	f.byName[name] = e
	f.fs.Var(e, name, usage)
}

// StringVar defines a string flag --name with environment fallback env (""
// for none) and default def, stored in *p. A word in backquotes in usage is
// shown as the value placeholder, as with the flag package.
func (f *FlagSet) StringVar(p *string, name, env string, def string, usage string) {
	*p = def
	f.add(name, env, usage, "string", def, (*stringValue)(p))
}

// IntVar defines an int flag; see StringVar.
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

// DurationVar defines a time.Duration flag in Go syntax (500ms, 1m30s); see
// StringVar.
func (f *FlagSet) DurationVar(p *time.Duration, name, env string, def time.Duration, usage string) {
	*p = def
	f.add(name, env, usage, "duration", def.String(), (*durationValue)(p))
}

// StringsVar defines a comma-separated list flag; see StringVar. Items are
// trimmed of spaces and empty items are dropped, so "a, ,b," is [a b]. The
// first use on the command line replaces the default; repeating the flag
// appends (--brokers a --brokers b is [a b]). *p gets a copy of def.
func (f *FlagSet) StringsVar(p *[]string, name, env string, def []string, usage string) {
	*p = append([]string(nil), def...)
	f.add(name, env, usage, "a,b,...", strings.Join(def, ","), &stringsValue{p: p})
}

// Parse parses args (without the program name), then applies the environment
// variable of every flag not set on the command line. An environment variable
// that is unset or empty leaves the default.
//
// A bad command-line value is an error naming the flag
// (`--max-delay: "abc" is not a duration`); environment values that do not
// parse are all reported, joined, each naming the variable and the flag
// (`HOURGLASS_MAX_DELAY (--max-delay): "abc" is not a duration`). For -h or
// --help Parse writes Usage and returns flag.ErrHelp. Parse prints nothing
// else: the caller prints the error.
func (f *FlagSet) Parse(args []string) error {
	f.flagErr = nil
	if err := f.fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			f.Usage()
			return flag.ErrHelp
		}
		if f.flagErr != nil {
			return f.flagErr
		}
		return err
	}
	onCommandLine := make(map[string]bool)
	f.fs.Visit(func(fl *flag.Flag) { onCommandLine[fl.Name] = true })

	var errs []error
	for _, e := range f.entries {
		if onCommandLine[e.name] {
			e.source = SourceFlag
			continue
		}
		if e.env == "" {
			continue
		}
		v, ok := f.lookupEnv(e.env)
		if !ok || v == "" {
			continue
		}
		if err := e.val.parse(v); err != nil {
			errs = append(errs, fmt.Errorf("%s (--%s): %w", e.env, e.name, err))
			continue
		}
		e.source = SourceEnv
	}
	return errors.Join(errs...)
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

// Name returns how to refer to flag in a message: "--max-delay
// (HOURGLASS_MAX_DELAY)", or "--max-delay" if it has no environment variable
// or was never registered.
func (f *FlagSet) Name(flag string) string {
	if e, ok := f.byName[flag]; ok && e.env != "" {
		return "--" + flag + " (" + e.env + ")"
	}
	return "--" + flag
}

// Usage writes the usage header, then every flag in registration order with
// its environment variable and default:
//
//	--brokers host:port,...  (env HOURGLASS_BROKERS, default 127.0.0.1:9092)
//	      usage text
func (f *FlagSet) Usage() {
	var b strings.Builder
	if f.header != "" {
		b.WriteString(f.header)
		if !strings.HasSuffix(f.header, "\n") {
			b.WriteByte('\n')
		}
	}
	for _, e := range f.entries {
		b.WriteString("  --")
		b.WriteString(e.name)
		if e.arg != "" {
			b.WriteByte(' ')
			b.WriteString(e.arg)
		}
		var notes []string
		if e.env != "" {
			notes = append(notes, "env "+e.env)
		}
		if e.def != "" {
			notes = append(notes, "default "+e.mask(e.def))
		}
		if len(notes) > 0 {
			b.WriteString("  (")
			b.WriteString(strings.Join(notes, ", "))
			b.WriteByte(')')
		}
		b.WriteByte('\n')
		if e.usage != "" {
			b.WriteString("        ")
			b.WriteString(strings.ReplaceAll(e.usage, "\n", "\n        "))
			b.WriteByte('\n')
		}
	}
	io.WriteString(f.out, b.String())
}

// Args returns the arguments left after the flags.
func (f *FlagSet) Args() []string { return f.fs.Args() }

// PrintConfig writes every flag's effective value and its source, one per
// line in registration order, as `--name=value (source)`. An empty value is
// written as "". The non-empty value of a flag whose name contains "password"
// or "secret" is written as ***.
func (f *FlagSet) PrintConfig(w io.Writer) {
	var b strings.Builder
	for _, e := range f.entries {
		v := e.val.String()
		if v == "" {
			v = `""`
		}
		fmt.Fprintf(&b, "--%s=%s (%s)\n", e.name, e.mask(v), e.source)
	}
	io.WriteString(w, b.String())
}

// mask hides v if the flag holds a secret.
func (e *entry) mask(v string) string {
	n := strings.ToLower(e.name)
	if v != "" && v != `""` && (strings.Contains(n, "password") || strings.Contains(n, "secret")) {
		return "***"
	}
	return v
}

// String implements flag.Value.
func (e *entry) String() string {
	if e == nil || e.val == nil {
		return ""
	}
	return e.val.String()
}

// Set implements flag.Value for command-line values, recording an error that
// names the flag for Parse to return.
func (e *entry) Set(s string) error {
	err := e.val.parse(s)
	if err != nil && e.f.flagErr == nil {
		e.f.flagErr = fmt.Errorf("--%s: %w", e.name, err)
	}
	return err
}

// IsBoolFlag lets the flag package accept a bool flag without a value.
func (e *entry) IsBoolFlag() bool {
	_, ok := e.val.(*boolValue)
	return ok
}

type stringValue string

func (v *stringValue) parse(s string) error { *v = stringValue(s); return nil }
func (v *stringValue) String() string       { return string(*v) }

type intValue int

func (v *intValue) parse(s string) error {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("%q is not an integer", s)
	}
	*v = intValue(n)
	return nil
}
func (v *intValue) String() string { return strconv.Itoa(int(*v)) }

type floatValue float64

func (v *floatValue) parse(s string) error {
	n, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return fmt.Errorf("%q is not a number", s)
	}
	*v = floatValue(n)
	return nil
}
func (v *floatValue) String() string { return strconv.FormatFloat(float64(*v), 'g', -1, 64) }

type boolValue bool

func (v *boolValue) parse(s string) error {
	b, err := strconv.ParseBool(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("%q is not a boolean", s)
	}
	*v = boolValue(b)
	return nil
}
func (v *boolValue) String() string { return strconv.FormatBool(bool(*v)) }

type durationValue time.Duration

func (v *durationValue) parse(s string) error {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("%q is not a duration", s)
	}
	*v = durationValue(d)
	return nil
}
func (v *durationValue) String() string { return time.Duration(*v).String() }

type stringsValue struct {
	p   *[]string
	set bool // a command-line use has replaced the default
}

func (v *stringsValue) parse(s string) error {
	items := SplitList(s)
	if v.set {
		*v.p = append(*v.p, items...)
	} else {
		*v.p = items
		v.set = true
	}
	return nil
}
func (v *stringsValue) String() string { return strings.Join(*v.p, ",") }

// SplitList splits a comma-separated list, trims spaces from each item and
// drops empty items. It returns a non-nil, possibly empty, slice.
func SplitList(s string) []string {
	out := []string{}
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
