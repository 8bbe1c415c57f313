package cli

import (
	"errors"
	"flag"
	"fmt"
)

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
