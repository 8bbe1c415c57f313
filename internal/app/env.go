package app

import "github.com/hourglass/hourglass/internal/cli"

// env is the environment variable of a flag.
var env = cli.Env
